"""``majorCompact`` leaves no copy of what reads no longer see in any file of the data directory.

A fresh gateway per test (two workers, every batch through the pending log), so the bytes
searched for can only come from the test's own writes. Every file of the data directory is read
as bytes: the database and its WAL, the pending log and its WAL, the shared-memory files.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import happybase
import pytest

from profile_store.hbase_gateway.process import EmbeddedGateway

SECRET = b"forgotten-7d1c0e"
ROWS = 3000  # a bulk batch of many pages, so the deleted rows share pages with kept ones


@pytest.fixture
def gateway(tmp_path) -> Iterator[EmbeddedGateway]:
    server_args = ("--defer-batches-from", "1", "--workers", "2", "--compact-after-cells", "0")
    with EmbeddedGateway(tmp_path / "store", server_args=server_args) as running:
        yield running


@pytest.fixture
def table(gateway) -> Iterator[happybase.Table]:
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.create_table("t", {"cf": {"max_versions": 1}})
    yield connection.table("t")
    connection.close()


def files_holding(data_dir: Path, needle: bytes) -> list[str]:
    return sorted(p.name for p in data_dir.iterdir() if p.is_file() and needle in p.read_bytes())


def load(table: happybase.Table, secret_row: bytes, secret_value: bytes) -> None:
    with table.batch() as batch:
        for i in range(ROWS):
            batch.put(b"row-%05d" % i, {b"cf:a": b"kept-%05d" % i + b"x" * 200})
        batch.put(secret_row, {b"cf:a": secret_value, b"cf:big": secret_value * 600})


def test_a_deleted_row_leaves_no_copy_once_majorcompact_returns(gateway, table):
    load(table, b"p|" + SECRET, b"value of " + SECRET)
    table.delete(b"p|" + SECRET)
    assert files_holding(gateway.data_dir, SECRET)  # the pending log at least: not vacuous
    table.connection.compact_table("t", major=True)
    assert files_holding(gateway.data_dir, SECRET) == []


def test_an_overwritten_value_leaves_no_copy_once_majorcompact_returns(gateway, table):
    load(table, b"row-secret", b"old " + SECRET)
    table.put(b"row-secret", {b"cf:a": b"new value", b"cf:big": b"new"})
    table.connection.compact_table("t", major=True)
    assert files_holding(gateway.data_dir, SECRET) == []
    assert table.row(b"row-secret") == {b"cf:a": b"new value", b"cf:big": b"new"}


def test_a_delete_marker_naming_the_row_is_gone_once_majorcompact_returns(gateway, table):
    load(table, b"row-000", b"unrelated")
    table.delete(b"l|member_id|" + SECRET)  # a marker for a row that never existed
    table.connection.compact_table("t", major=True)
    assert files_holding(gateway.data_dir, SECRET) == []


def test_majorcompact_by_region_name_purges_alike(gateway, table):
    load(table, b"p|" + SECRET, b"value")
    table.delete(b"p|" + SECRET)
    table.connection.client.majorCompact(table.regions()[0]["name"])
    assert files_holding(gateway.data_dir, SECRET) == []


def test_the_live_rows_read_back_unchanged_after_the_purge(gateway, table):
    load(table, b"p|" + SECRET, b"value")
    table.delete(b"p|" + SECRET)
    before = list(table.scan())
    table.connection.compact_table("t", major=True)
    assert list(table.scan()) == before and len(before) == ROWS


def test_a_minor_compaction_keeps_the_pending_log_as_it_was(gateway, table):
    # Only a major compaction purges: a minor one is the background's routine.
    load(table, b"p|" + SECRET, b"value")
    table.delete(b"p|" + SECRET)
    table.connection.compact_table("t", major=False)
    assert any(name.startswith("pending") for name in files_holding(gateway.data_dir, SECRET))


def sketch_like(rng: random.Random, hashes: list[bytes]) -> bytes:
    """A serialized sketch's shape: random 8-byte entries, ``hashes`` among them at 8-byte
    offsets, most values past a page (overflow pages, as theta sketches of a day are)."""
    entries = [rng.randbytes(8) for _ in range(rng.choice([40, 250, 1100, 3800]))]
    for value in hashes:
        entries[rng.randrange(len(entries))] = value
    return b"".join(entries)


def test_a_rebuilt_sketch_table_leaves_no_hash_in_any_page_once_majorcompact_returns(gateway):
    # Zeroing deleted cells (secure_delete) left one hash in a live page here: SQLite rebalancing
    # a page keeps bytes of cells it moved in the page's unused part. VACUUM leaves none.
    rng = random.Random(3)
    hashes = [rng.randbytes(8) for _ in range(20)]
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.create_table("sk", {"s": {"max_versions": 1}})
    table = connection.table("sk")
    rows = [b"app|event|day%02d|%04d" % (i % 5, i) for i in range(3000)]
    with table.batch(batch_size=500) as batch:
        for row in rows:
            held = [h for h in hashes if rng.random() < 0.02]
            batch.put(row, {b"s:theta": sketch_like(rng, held)})
    assert any(files_holding(gateway.data_dir, h) for h in hashes)  # not vacuous
    with table.batch(batch_size=500) as batch:  # the day rebuilt without them
        for row in rows:
            if rng.random() < 0.1:
                batch.delete(row)
            else:
                batch.put(row, {b"s:theta": sketch_like(rng, [])})
    connection.compact_table("sk", major=True)
    assert [h.hex() for h in hashes if files_holding(gateway.data_dir, h)] == []
    connection.close()
