"""The store's format version: recorded in every store, added to one written before versions
were, and a store of a newer format refused at start with what to do."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import happybase
import pytest

from profile_store.hbase_gateway.data_dir import DB_FILE, LOG_FILE
from profile_store.hbase_gateway.process import EmbeddedGateway, GatewayStartError
from profile_store.hbase_gateway.store import Store
from profile_store.hbase_gateway.store_format import FORMAT_VERSION, StoreFormatError

REPO = Path(__file__).resolve().parents[2]


def recorded(data_dir: Path) -> int | None:
    conn = sqlite3.connect(data_dir / DB_FILE)
    try:
        found = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    finally:
        conn.close()
    return None if found is None else found[0]


def set_version(data_dir: Path, version: int | None) -> None:
    conn = sqlite3.connect(data_dir / DB_FILE, isolation_level=None)
    try:
        conn.execute("DELETE FROM meta WHERE key = 'format_version'")
        if version is not None:
            conn.execute("INSERT INTO meta VALUES ('format_version', ?)", (version,))
    finally:
        conn.close()


def test_a_new_store_records_the_format_version(tmp_path: Path) -> None:
    Store(tmp_path).close()
    assert recorded(tmp_path) == FORMAT_VERSION == 1


def test_a_store_written_before_versions_were_recorded_gets_one_and_keeps_its_cells(
    tmp_path: Path,
) -> None:
    with EmbeddedGateway(tmp_path, workers=2) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", {"cf": {"max_versions": 3}})
        connection.table("t").put(b"r", {b"cf:a": b"1"}, timestamp=5)
        connection.table("t").put(b"r", {b"cf:a": b"2"}, timestamp=6)
        connection.close()
    set_version(tmp_path, None)  # what the code before format versions left
    assert recorded(tmp_path) is None

    with EmbeddedGateway(tmp_path, workers=2) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        cells = connection.table("t").cells(b"r", b"cf:a", versions=3, include_timestamp=True)
        connection.close()
        log = gateway.log_path.read_text()
    assert cells == [(b"2", 6), (b"1", 5)]
    assert recorded(tmp_path) == 1
    assert f"{tmp_path / DB_FILE}: recording format version 1" in log


def test_a_store_of_a_newer_format_is_refused_naming_the_file_both_versions_and_what_to_do(
    tmp_path: Path,
) -> None:
    Store(tmp_path).close()
    set_version(tmp_path, FORMAT_VERSION + 1)
    (tmp_path / LOG_FILE).unlink()
    with pytest.raises(StoreFormatError) as refused:
        Store(tmp_path)
    message = str(refused.value)
    assert message.startswith(f"{tmp_path / DB_FILE}: the store's format version is 2, ")
    assert "this gateway supports version 1" in message
    assert "Run that release (or a newer one)" in message
    assert not (tmp_path / LOG_FILE).exists()  # nothing of the store was written


@pytest.mark.parametrize("workers", [1, 2])
def test_a_gateway_on_a_store_of_a_newer_format_exits_with_the_reason(
    tmp_path: Path, workers: int
) -> None:
    Store(tmp_path).close()
    set_version(tmp_path, 7)
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "hbase-gateway", "--data-dir", str(tmp_path)]
        + ["--port", "0", "--workers", str(workers)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1
    assert completed.stderr.strip() == (
        f"hbase-gateway: {tmp_path / DB_FILE}: the store's format version is 7, this gateway "
        "supports version 1: it was written by a newer release of profile_store. Run that "
        "release (or a newer one) against it, or restore a backup taken by this release into "
        "another data directory (profiles hbase-gateway restore)."
    )
    with pytest.raises(GatewayStartError, match="the store's format version is 7"):
        EmbeddedGateway(tmp_path, workers=workers).start()
