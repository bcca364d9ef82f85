"""``profiles hbase-gateway backup`` and ``restore``: a consistent copy of a store taken while a
real gateway serves a writer, opened by a new gateway and compared cell by cell (every version,
every timestamp) with what the writer had written at the copy's moment."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import happybase
import pytest
from gateway_sockets import wait_for

from profile_store.hbase_gateway.data_dir import DB_FILE
from profile_store.hbase_gateway.pending import read_counters
from profile_store.hbase_gateway.process import EmbeddedGateway, child_pids
from profile_store.hbase_gateway.store_lock import held_exclusively

REPO = Path(__file__).resolve().parents[2]
FAMILIES = {"cf": {"max_versions": 1}, "h": {"max_versions": 3}}
HOT_ROWS = 10
State = dict[tuple[bytes, bytes], list[tuple[bytes, int]]]


def write_batch(table: happybase.Table, i: int) -> None:
    """Batch ``i``, all at timestamp ``i + 1``: a new row ``b<i>``, and but for every fourth
    batch a new version of a hot row's cell, and every third a delete of the previous new row's
    ``cf:a``. Three mutations or more: acknowledged from the pending log (see the gateway's
    ``--defer-batches-from 3``); two: applied before the reply."""
    with table.batch(timestamp=i + 1) as batch:
        batch.put(b"b%06d" % i, {b"cf:a": b"a%d" % i, b"cf:b": b"b%d" % i})
        if i % 4 != 3:
            batch.put(b"h%d" % (i % HOT_ROWS), {b"h:v": b"v%d" % i})
            if i % 3 == 0 and i > 0:
                batch.delete(b"b%06d" % (i - 1), columns=[b"cf:a"])


def expected(batches: int) -> State:
    """Every cell, newest version first, once ``batches`` batches are written."""
    cells: State = {}
    for i in range(batches):
        cells[(b"b%06d" % i, b"cf:a")] = [(b"a%d" % i, i + 1)]
        cells[(b"b%06d" % i, b"cf:b")] = [(b"b%d" % i, i + 1)]
        if i % 4 != 3:
            hot = (b"h%d" % (i % HOT_ROWS), b"h:v")
            cells[hot] = [(b"v%d" % i, i + 1), *cells.get(hot, [])][:3]
            if i % 3 == 0 and i > 0:
                del cells[(b"b%06d" % (i - 1), b"cf:a")]
    return cells


def stored(gateway: EmbeddedGateway) -> State:
    """Every cell of table ``t`` read through the gateway, each column's versions with their
    timestamps, newest first."""
    connection = happybase.Connection(**gateway.connection_kwargs())
    try:
        table = connection.table("t")
        cells: State = {}
        for row, columns in table.scan():
            for column in columns:
                cells[(row, column)] = table.cells(row, column, versions=10, include_timestamp=True)
        return cells
    finally:
        connection.close()


def new_rows(cells: State) -> int:
    return len({row for row, _ in cells if row.startswith(b"b")})


def profiles(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "hbase-gateway", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )


class Writer(threading.Thread):
    """Writes batch after batch until stopped; ``acknowledged`` counts the batches answered."""

    def __init__(self, gateway: EmbeddedGateway) -> None:
        super().__init__(daemon=True)
        self.connection = happybase.Connection(**gateway.connection_kwargs())
        self.acknowledged = 0
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        table = self.connection.table("t")
        try:
            while not self.stop.is_set():
                write_batch(table, self.acknowledged)
                self.acknowledged += 1
        except BaseException as error:
            self.error = error
        finally:
            self.connection.close()


def gateway_with_table(data_dir: Path) -> EmbeddedGateway:
    gateway = EmbeddedGateway(
        data_dir, workers=2, server_args=("--defer-batches-from", "3")
    ).start()
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.create_table("t", FAMILIES)
    bulk = {"cf": {}}
    connection.create_table("bulk", bulk)  # so that the copy takes a while
    with connection.table("bulk").batch(batch_size=5000) as batch:
        for n in range(40_000):
            batch.put(b"%08d" % n, {b"cf:x": os.urandom(100)})
    connection.close()
    return gateway


def test_a_backup_taken_while_a_client_writes_holds_the_store_as_of_one_moment(tmp_path):
    gateway = gateway_with_table(tmp_path / "source")
    try:
        writer = Writer(gateway)
        writer.start()
        assert wait_for(lambda: writer.acknowledged >= 200 or writer.error is not None)
        before = writer.acknowledged
        made = profiles("backup", "--data-dir", str(gateway.data_dir), "--to", str(tmp_path / "b"))
        after = writer.acknowledged
        writer.stop.set()
        writer.join(60)
        assert writer.error is None, writer.error
        assert made.returncode == 0, made.stderr
        source = stored(gateway)
    finally:
        gateway.stop()
    assert source == expected(writer.acknowledged)  # the model is the source's state

    restored = profiles("restore", "--from", str(tmp_path / "b"), "--data-dir", str(tmp_path / "r"))
    assert restored.returncode == 0, restored.stderr
    with EmbeddedGateway(tmp_path / "r", workers=2) as copy:
        backed_up = stored(copy)
    moment = new_rows(backed_up)
    assert before <= moment <= after + 1  # + 1: a batch committed, its answer not yet read
    assert backed_up == expected(moment)


def test_batches_acknowledged_but_not_yet_applied_are_in_the_backup(tmp_path):
    gateway = gateway_with_table(tmp_path / "source")
    try:
        upkeep = [pid for pid in child_pids(gateway.pid) if not _listens(pid)]
        assert len(upkeep) == 1, "the upkeep process is the one child without the listener"
        assert wait_for(lambda: len(set(read_counters(gateway.data_dir))) == 1)  # bulk applied
        os.kill(upkeep[0], signal.SIGSTOP)  # nothing is applied from the pending log now
        try:
            connection = happybase.Connection(**gateway.connection_kwargs())
            for i in range(3):
                write_batch(connection.table("t"), i)
            connection.close()
            enqueued, applied = read_counters(gateway.data_dir)
            assert enqueued - applied == 3
            made = profiles(
                "backup", "--data-dir", str(gateway.data_dir), "--to", str(tmp_path / "b")
            )
        finally:
            os.kill(upkeep[0], signal.SIGCONT)
    finally:
        gateway.stop()
    assert made.returncode == 0, made.stderr
    assert "3 acknowledged batches applied to the copy" in made.stdout
    assert (
        profiles(
            "restore", "--from", str(tmp_path / "b"), "--data-dir", str(tmp_path / "r")
        ).returncode
        == 0
    )
    with EmbeddedGateway(tmp_path / "r", workers=1) as copy:
        assert stored(copy) == expected(3)


def test_a_restore_is_refused_while_a_gateway_has_the_store_open(tmp_path):
    with EmbeddedGateway(tmp_path / "source", workers=1) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", FAMILIES)
        write_batch(connection.table("t"), 0)
        assert (
            profiles(
                "backup", "--data-dir", str(tmp_path / "source"), "--to", str(tmp_path / "b")
            ).returncode
            == 0
        )
        write_batch(connection.table("t"), 1)
        refused = profiles(
            "restore",
            "--from",
            str(tmp_path / "b"),
            "--data-dir",
            str(tmp_path / "source"),
            "--replace",
        )
        assert refused.returncode == 1
        assert refused.stderr == (
            f"profiles hbase-gateway restore: {tmp_path / 'source'}: a gateway (or another "
            "restore) has this store open; stop it first\n"
        )
        connection.close()
        assert stored(gateway) == expected(2)  # untouched


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_gateway_started_during_a_restore_exits_with_the_reason(tmp_path, workers):
    with held_exclusively(tmp_path):  # what a restore holds while it replaces the store
        started = profiles("--data-dir", str(tmp_path), "--port", "0", "--workers", workers)
    assert started.returncode == 1
    assert started.stderr == (
        f"hbase-gateway: {tmp_path}: a restore is replacing this store; start the gateway once "
        "it is done\n"
    )


def test_a_restore_over_a_stopped_store_needs_replace(tmp_path):
    with EmbeddedGateway(tmp_path / "source", workers=1) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", FAMILIES)
        write_batch(connection.table("t"), 0)
        connection.close()
        assert (
            profiles(
                "backup", "--data-dir", str(tmp_path / "source"), "--to", str(tmp_path / "b")
            ).returncode
            == 0
        )
        connection = happybase.Connection(**gateway.connection_kwargs())
        write_batch(connection.table("t"), 1)
        connection.close()
    args = ("restore", "--from", str(tmp_path / "b"), "--data-dir", str(tmp_path / "source"))
    refused = profiles(*args)
    assert refused.returncode == 1
    assert "already holds a store; pass --replace to overwrite it" in refused.stderr
    assert profiles(*args, "--replace").returncode == 0
    with EmbeddedGateway(tmp_path / "source", workers=1) as gateway:
        assert stored(gateway) == expected(1)


def test_a_backup_never_overwrites_a_file(tmp_path):
    with EmbeddedGateway(tmp_path / "source", workers=1):
        (tmp_path / "b").write_text("kept")
        refused = profiles(
            "backup", "--data-dir", str(tmp_path / "source"), "--to", str(tmp_path / "b")
        )
    assert refused.returncode == 1
    assert f"{tmp_path / 'b'}: already exists" in refused.stderr
    assert (tmp_path / "b").read_text() == "kept"


def test_a_backup_of_a_newer_format_is_not_restored(tmp_path):
    with EmbeddedGateway(tmp_path / "source", workers=1):
        assert (
            profiles(
                "backup", "--data-dir", str(tmp_path / "source"), "--to", str(tmp_path / "b")
            ).returncode
            == 0
        )
    conn = sqlite3.connect(tmp_path / "b", isolation_level=None)
    conn.execute("UPDATE meta SET value = 9 WHERE key = 'format_version'")
    conn.close()
    refused = profiles("restore", "--from", str(tmp_path / "b"), "--data-dir", str(tmp_path / "r"))
    assert refused.returncode == 1
    assert (
        f"{tmp_path / 'b'}: the store's format version is 9, this gateway supports version 1"
        in refused.stderr
    )
    assert not (tmp_path / "r" / DB_FILE).exists()


def _listens(pid: int) -> bool:
    return any(
        os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        for fd in os.listdir(f"/proc/{pid}/fd")
        if os.path.islink(f"/proc/{pid}/fd/{fd}")
    )
