"""The storage engine below the wire: what compaction reclaims, and the on-disk layout."""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

import pytest

from profile_store.hbase_gateway.compaction import (
    FORCE_AFTER,
    PACED_SHARE,
    BackgroundCompactor,
)
from profile_store.hbase_gateway.errors import GatewayInternalError, GatewayIOError
from profile_store.hbase_gateway.scanner import Scanner, ScanSpec
from profile_store.hbase_gateway.schema import FamilyDescriptor, now_ms
from profile_store.hbase_gateway.store import Store
from profile_store.hbase_gateway.wire import encode_row


@pytest.fixture
def store(tmp_path: Path):
    opened = Store(tmp_path)
    opened.create_table(
        b"t",
        [FamilyDescriptor(b"cf", max_versions=2), FamilyDescriptor(b"ttl", time_to_live=60)],
    )
    yield opened
    opened.close()


def stored(store: Store, sql_table: str) -> int:
    with sqlite3.connect(store.path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {sql_table}").fetchone()[0]


def put(store: Store, row: bytes, column: bytes, value: bytes, ts: int) -> None:
    store.mutate_rows(b"t", [(row, [(False, column, value)])], ts)


def test_compaction_reclaims_versions_beyond_max_versions(store: Store) -> None:
    for ts in range(1, 6):
        put(store, b"r", b"cf:a", b"v%d" % ts, ts)
    cells = store.table(b"t").cells_table
    assert stored(store, cells) == 5
    store.compact(b"t", major=False)
    assert stored(store, cells) == 2


def test_compaction_keeps_each_columns_newest_version_in_a_one_version_family(
    tmp_path: Path,
) -> None:
    """Such families (every family of the profile and sketch tables) are reclaimed a column at
    a time; a family of more versions beside them, a cell at a time."""
    store = Store(tmp_path / "one")
    try:
        store.create_table(
            b"one", [FamilyDescriptor(b"f", max_versions=1), FamilyDescriptor(b"g", max_versions=2)]
        )
        for ts in (1, 2, 3):
            cells = [(False, b"f:a", b"a%d" % ts), (False, b"f:b", b"b%d" % ts)]
            store.mutate_rows(b"one", [(b"r", [*cells, (False, b"g:c", b"c%d" % ts)])], ts)
        store.mutate_rows(b"one", [(b"s", [(False, b"f:a", b"only")])], 1)
        store.compact(b"one", major=False)
        table = store.table(b"one").cells_table
        with sqlite3.connect(store.path) as conn:
            kept = conn.execute(f"SELECT row, fam, qual, ts FROM {table} ORDER BY 1, 2, 3, 4")
            kept = kept.fetchall()
        assert kept == [
            (b"r", 0, b"a", 3),
            (b"r", 0, b"b", 3),
            (b"r", 1, b"c", 2),
            (b"r", 1, b"c", 3),
            (b"s", 0, b"a", 1),
        ]
    finally:
        store.close()


def test_compaction_reclaims_expired_cells(store: Store) -> None:
    put(store, b"r", b"ttl:a", b"old", now_ms() - 120_000)
    put(store, b"r", b"ttl:b", b"new", now_ms())
    store.compact(b"t", major=False)
    assert stored(store, store.table(b"t").cells_table) == 1


def test_delete_removes_covered_cells_at_once_and_keeps_a_marker(store: Store) -> None:
    put(store, b"r", b"cf:a", b"x", 10)
    store.mutate_rows(b"t", [(b"r", [(True, b"cf:a", None)])], 20)
    info = store.table(b"t")
    assert stored(store, info.cells_table) == 0
    assert stored(store, info.markers_table) == 1


def test_only_major_compaction_drops_delete_markers(store: Store) -> None:
    store.delete_row(b"t", b"r", 20)
    markers = store.table(b"t").markers_table
    store.compact(b"t", major=False)
    assert stored(store, markers) == 2  # one family marker per family
    store.compact(b"t", major=True)
    assert stored(store, markers) == 0


def test_compaction_walks_tables_larger_than_one_chunk(store: Store) -> None:
    for ts in (1, 2, 3):
        store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"v")]) for i in range(5000)], ts)
    store.compact(b"t", major=False)
    assert stored(store, store.table(b"t").cells_table) == 10_000


def test_a_compaction_is_told_after_each_chunk_how_long_it_took(store: Store) -> None:
    for ts in (1, 2, 3):
        store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"v")]) for i in range(5000)], ts)
    chunks: list[float] = []
    assert store.compact(b"t", major=False, between_chunks=lambda s: chunks.append(s) or True)
    assert len(chunks) == 3  # 2,000 + 2,000 + 1,000 rows
    assert all(seconds > 0 for seconds in chunks)
    assert stored(store, store.table(b"t").cells_table) == 10_000


def test_a_compaction_told_to_stop_ends_after_its_chunk(store: Store) -> None:
    for ts in (1, 2, 3):
        store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"v")]) for i in range(5000)], ts)
    assert not store.compact(b"t", major=False, between_chunks=lambda _seconds: False)
    # the first 2,000 rows lost their third version, the other 3,000 rows wait
    assert stored(store, store.table(b"t").cells_table) == 2 * 2000 + 3 * 3000
    assert store.stored_after_compaction(b"t") == 0  # not a finished compaction


def test_compaction_reclaims_a_row_between_rows_with_nothing_to_reclaim(store: Store) -> None:
    store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"v")]) for i in range(5000)], 1)
    for ts in (2, 3):
        put(store, b"r02500", b"cf:a", b"v%d" % ts, ts)
    store.compact(b"t", major=False)
    assert stored(store, store.table(b"t").cells_table) == 5001


def test_cells_written_during_a_compaction_count_toward_the_next_one_not_its_size(
    store: Store,
) -> None:
    """A daily run rewrites its rows while a compaction passes over them: the rewritten rows the
    pass had already gone by keep a stale version, which the next compaction must reclaim."""
    rows = range(5000)
    for ts in (1, 2, 3):
        store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"v")]) for i in rows], ts)
    rewritten: list[bool] = []

    def rewrite_every_row_once(_seconds: float) -> bool:
        if not rewritten:
            rewritten.append(True)
            store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"w")]) for i in rows], 4)
        return True

    assert store.compact(b"t", major=False, between_chunks=rewrite_every_row_once)
    # the first chunk's 2,000 rows keep versions 2, 3 and 4; the other 3,000 rows keep 3 and 4
    assert stored(store, store.table(b"t").cells_table) == 2000 * 3 + 3000 * 2
    assert store.written_since_compaction(b"t") == 5000
    assert store.stored_after_compaction(b"t") == 12_000 - 5000
    compactor = BackgroundCompactor(store, after_cells=1_000, quiet_s=0)
    assert compactor.compact_due_tables() == [b"t"]  # 5,000 written >= half of 7,000
    assert stored(store, store.table(b"t").cells_table) == 10_000


def test_a_compaction_with_nothing_to_reclaim_runs_no_delete(store: Store) -> None:
    store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"v")]) for i in range(5000)], 1)
    statements: list[str] = []
    store._writer.set_trace_callback(statements.append)
    store.compact(b"t", major=False)
    store._writer.set_trace_callback(None)
    assert not [s for s in statements if s.startswith("DELETE FROM cells_")]


def test_a_compaction_holds_the_write_lock_only_to_delete_the_cells_it_found(
    store: Store,
) -> None:
    for ts in (1, 2, 3):
        store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"v")]) for i in range(5000)], ts)
    statements: list[str] = []
    store._writer.set_trace_callback(statements.append)
    store.compact(b"t", major=False)
    store._writer.set_trace_callback(None)
    cells = store.table(b"t").cells_table
    on_cells = [s for s in statements if cells in s]
    assert on_cells, "the compaction deleted nothing"
    by_key = re.compile(
        f"DELETE FROM {cells} WHERE row = x'[0-9a-f]+' AND fam = [0-9]+ "
        "AND qual = x'[0-9a-f]*' AND ts = [0-9]+"
    )
    assert all(by_key.fullmatch(s) for s in on_cells), on_cells[:3]
    assert stored(store, cells) == 10_000


def test_deleting_a_table_drops_its_storage(store: Store) -> None:
    info = store.table(b"t")
    store.set_enabled(b"t", False)
    store.delete_table(b"t")
    with sqlite3.connect(store.path) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert info.cells_table not in names and info.markers_table not in names
    with pytest.raises(GatewayIOError):
        store.table(b"t")


def test_major_compaction_returns_space_to_the_file_system(store: Store) -> None:
    for ts in range(1, 11):
        store.mutate_rows(
            b"t", [(b"r%05d" % i, [(False, b"cf:a", b"x" * 200)]) for i in range(2000)], ts
        )
    assert store.checkpoint()
    before = store.path.stat().st_size
    store.compact(b"t", major=True)
    assert store.path.stat().st_size < before * 0.4


def test_deleting_a_table_returns_space_to_the_file_system(store: Store) -> None:
    store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"x" * 500)]) for i in range(4000)])
    assert store.checkpoint()
    before = store.path.stat().st_size
    store.set_enabled(b"t", False)
    store.delete_table(b"t")
    assert store.checkpoint()
    assert store.path.stat().st_size < before * 0.2


def test_store_uses_write_ahead_logging(store: Store) -> None:
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def write_cells(store: Store, cells: int) -> None:
    store.mutate_rows(b"t", [(b"r%06d" % i, [(False, b"cf:a", b"v")]) for i in range(cells)], 1)


def test_a_table_being_written_is_compacted_once_its_writes_pause(store: Store) -> None:
    compactor = BackgroundCompactor(store, after_cells=1_000, quiet_s=0.3)
    assert compactor.compact_due_tables() == []  # nothing due yet
    write_cells(store, 1_500)
    assert compactor.compact_due_tables() == []  # due, but its written count just moved
    assert compactor.waiting_for_quiet
    time.sleep(0.35)
    assert compactor.compact_due_tables() == [b"t"]


def test_a_table_first_seen_already_due_is_compacted_at_once(store: Store) -> None:
    """A gateway started after a run compacts what the run left without waiting."""
    write_cells(store, 1_500)
    assert BackgroundCompactor(store, after_cells=1_000, quiet_s=60).compact_due_tables() == [b"t"]


def test_a_table_written_without_pause_is_still_compacted(store: Store) -> None:
    compactor = BackgroundCompactor(store, after_cells=1_000, quiet_s=60)
    assert compactor.compact_due_tables() == []
    write_cells(store, FORCE_AFTER * 1_000 - 1)
    assert compactor.compact_due_tables() == []
    write_cells(store, 1)
    assert compactor.compact_due_tables() == [b"t"]


def rests_of(compactor: BackgroundCompactor, monkeypatch) -> tuple[list[float], list[float]]:
    """The seconds each chunk of the compactor's compactions took, and each rest it took."""
    chunks: list[float] = []
    rests: list[float] = []
    compact = compactor.store.compact

    def timed(name, major, between_chunks):
        return compact(name, major, lambda s: chunks.append(s) or between_chunks(s))

    monkeypatch.setattr(compactor.store, "compact", timed)
    monkeypatch.setattr(compactor._stopping, "wait", lambda s: rests.append(s) or False)
    return chunks, rests


def test_a_compaction_of_a_table_still_being_written_rests_after_each_chunk(
    store: Store, monkeypatch
) -> None:
    """PACED_SHARE of a core at most: the table's writers and readers are slowed a little for
    longer instead of stalled for the whole pass."""
    compactor = BackgroundCompactor(store, after_cells=1_000, quiet_s=60)
    assert compactor.compact_due_tables() == []
    write_cells(store, 5_000)  # due FORCE_AFTER times over, and never quiet
    chunks, rests = rests_of(compactor, monkeypatch)
    assert compactor.compact_due_tables() == [b"t"]
    assert len(chunks) == 3
    assert rests == pytest.approx([c * (1 - PACED_SHARE) / PACED_SHARE for c in chunks])


def test_a_compaction_of_a_quiet_table_runs_without_rest(store: Store, monkeypatch) -> None:
    write_cells(store, 5_000)
    compactor = BackgroundCompactor(store, after_cells=1_000, quiet_s=60)
    chunks, rests = rests_of(compactor, monkeypatch)
    assert compactor.compact_due_tables() == [b"t"]  # first seen already due: quiet
    assert len(chunks) == 3
    assert rests == []


def test_a_stopping_compactor_ends_its_compaction_at_the_next_chunk(store: Store) -> None:
    compactor = BackgroundCompactor(store, after_cells=1_000, quiet_s=60)
    compactor._stopping.set()
    assert compactor._pace(True)(0.01) is False
    assert compactor._pace(False)(0.01) is False


def test_writes_through_another_store_keep_a_table_from_being_quiet(
    store: Store, tmp_path: Path
) -> None:
    """The compactor of a multi-process gateway serves no client: other processes write."""
    writer = Store(tmp_path)
    try:
        compactor = BackgroundCompactor(store, after_cells=1_000, quiet_s=0.3)
        assert compactor.compact_due_tables() == []
        for _ in range(3):
            write_cells(writer, 600)
            assert compactor.compact_due_tables() == []
            time.sleep(0.2)  # shorter than quiet_s
        time.sleep(0.35)
        assert compactor.compact_due_tables() == [b"t"]
        assert store.written_since_compaction(b"t") == 0
    finally:
        writer.close()


def test_committed_writes_reach_the_database_file_without_a_checkpoint_by_the_writer(
    store: Store,
) -> None:
    before = store.path.stat().st_size
    store.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"x" * 200)]) for i in range(5000)])
    deadline = time.monotonic() + 10
    while store.path.stat().st_size < before + 5000 * 200 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert store.path.stat().st_size >= before + 5000 * 200


def test_closing_the_store_leaves_an_empty_write_ahead_log(tmp_path: Path) -> None:
    opened = Store(tmp_path)
    opened.create_table(b"t", [FamilyDescriptor(b"cf")])
    opened.mutate_rows(b"t", [(b"r%05d" % i, [(False, b"cf:a", b"x" * 200)]) for i in range(2000)])
    opened.close()
    wal = tmp_path / "hbase.sqlite3-wal"
    assert not wal.exists() or wal.stat().st_size == 0


def batch_of(rows: int, column: bytes = b"cf:a", value: bytes = b"v") -> list:
    """``rows`` rows of one put each (a batch large enough to cross any internal chunking)."""
    return [(b"r%05d" % i, [(False, column, value + b"%d" % i)]) for i in range(rows)]


def cells_of(store: Store, rows: list[bytes], versions: int = 1) -> dict:
    found = store.get_rows(b"t", rows, None, versions=versions)
    return {row: [(c[2], c[3], c[4]) for c in cells] for row, cells in found}


def test_a_batch_writing_one_cell_twice_at_one_timestamp_keeps_the_last_write(
    store: Store,
) -> None:
    batch = batch_of(250)
    batch[120] = (b"r00120", [(False, b"cf:a", b"first"), (False, b"cf:a", b"second")])
    batch.append((b"r00120", [(False, b"cf:a", b"third")]))
    store.mutate_batch(b"t", batch, 7)
    assert cells_of(store, [b"r00120"], versions=2) == {b"r00120": [(b"a", 7, b"third")]}
    assert len(cells_of(store, [row for row, _ in batch])) == 250


def test_a_batch_putting_and_deleting_one_cell_in_one_millisecond_keeps_nothing(
    store: Store,
) -> None:
    batch = batch_of(150)
    batch[3] = (b"r00003", [(False, b"cf:a", b"new"), (True, b"cf:a", None)])
    store.mutate_batch(b"t", batch)  # one server timestamp: puts first, then the delete
    assert cells_of(store, [b"r00003"]) == {}
    assert len(cells_of(store, [row for row, _ in batch])) == 149


def test_a_large_batch_on_rows_with_delete_markers_still_masks_older_puts(store: Store) -> None:
    store.delete_row(b"t", b"r00010", 20)
    store.mutate_batch(b"t", [(b"r00011", [(True, b"cf:a", None)])], 20)
    store.mutate_batch(b"t", batch_of(300), 10)  # older than both markers
    rows = [b"r%05d" % i for i in range(300)]
    assert set(cells_of(store, rows)) == set(rows) - {b"r00010", b"r00011"}
    store.mutate_batch(b"t", batch_of(300, value=b"w"), 30)  # newer: visible again
    assert cells_of(store, [b"r00010"]) == {b"r00010": [(b"a", 30, b"w10")]}


def test_a_failed_row_in_a_large_batch_leaves_the_other_rows_written(store: Store) -> None:
    batch = batch_of(250)
    batch[200] = (b"r00200", [(False, b"cf:a", b"x"), (False, b"nope:a", b"y")])
    batch.append((b"r00001", [(True, b"cf:a", None)]))
    with pytest.raises(GatewayIOError, match="Failed 1 action: .*nope"):
        store.mutate_batch(b"t", batch, 5)
    written = cells_of(store, [row for row, _ in batch])
    assert b"r00200" not in written and len(written) == 249  # the delete was not applied


def test_a_malformed_batch_on_a_missing_table_is_reported_as_malformed(store: Store) -> None:
    with pytest.raises(GatewayInternalError, match="Invalid famAndQf"):
        store.mutate_batch(b"missing", [(b"r", [(False, b"cf", b"v")])])
    with pytest.raises(GatewayIOError, match="RetriesExhausted"):
        store.mutate_batch(b"missing", [(b"r", [(False, b"cf:a", b"v")])])


def test_a_plain_scan_encoded_in_one_pass_returns_what_the_general_path_returns(
    store: Store,
) -> None:
    """Versions, TTL-expired cells, deletes (and their markers masking later puts), rows left
    empty and chunks cut mid-row all come out of the one-pass encoding as from
    ``finish_cells`` then ``encode_row``."""
    now = now_ms()
    for n in range(300):
        row = b"r%04d" % n
        for ts in range(1, n % 4 + 2):
            put(store, row, b"cf:a", b"a%d" % ts, ts)
        put(store, row, b"ttl:old", b"x", now - 120_000)
        if n % 3:
            put(store, row, b"ttl:new", b"y", now)
        if n % 5 == 0:
            store.mutate_rows(b"t", [(row, [(True, b"cf:a", None)])], 100)
            put(store, row, b"cf:a", b"masked", 50)
        if n % 7 == 0:
            store.mutate_rows(b"t", [(row, [(True, b"ttl", None)])], now + 1)
    info = store.table(b"t")

    def general(row: bytes, cells: list) -> bytes:
        return encode_row(info.column_prefixes, row, cells)

    for spec in [
        ScanSpec(),
        ScanSpec(caching=1),
        ScanSpec(start_row=b"r0100", stop_row=b"r0200", columns=[b"cf", b"ttl:new"]),
        ScanSpec(before_ts=3),
    ]:
        fast = Scanner(store, b"t", spec, encoded=True)
        slow = Scanner(store, b"t", spec, general)
        expected = slow.next_rows(10_000)
        assert expected  # the scan is not trivially empty
        got: list = []
        while batch := fast.next_rows(7):
            got.extend(batch)
        assert got == expected
