"""Large ``mutateRows`` batches are acknowledged from the pending log and applied later: no
client can tell, except by the speed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from profile_store.hbase_gateway.errors import GatewayInternalError, GatewayIOError
from profile_store.hbase_gateway.pending import PendingApplier
from profile_store.hbase_gateway.schema import FamilyDescriptor
from profile_store.hbase_gateway.store import Store

ROWS = [b"r%04d" % i for i in range(300)]


def open_store(path: Path) -> Store:
    """A store that defers every batch of two mutations or more."""
    return Store(path, deferred_batch_mutations=2)


@pytest.fixture
def store(tmp_path: Path):
    opened = open_store(tmp_path)
    opened.create_table(b"t", [FamilyDescriptor(b"cf", max_versions=3)])
    yield opened
    opened.close()


def batch(value: bytes, rows: list[bytes] = ROWS) -> list:
    return [(row, [(False, b"cf:a", value), (False, b"cf:b", value)]) for row in rows]


def values(store: Store, rows: list[bytes] = ROWS) -> set[bytes]:
    return {cell[4] for _, cells in store.get_rows(b"t", rows, None) for cell in cells}


def cells_on_disk(store: Store) -> int:
    with sqlite3.connect(store.path) as conn:
        return conn.execute(f"SELECT count(*) FROM {store.table(b't').cells_table}").fetchone()[0]


def test_a_deferred_batch_is_acknowledged_before_it_is_applied(store: Store) -> None:
    store.mutate_batch(b"t", batch(b"1"))
    assert store.pending_behind()
    assert cells_on_disk(store) == 0


def test_the_next_read_sees_a_deferred_batch(store: Store) -> None:
    store.mutate_batch(b"t", batch(b"1"))
    assert values(store) == {b"1"}
    assert not store.pending_behind()
    assert cells_on_disk(store) == 2 * len(ROWS)


def test_a_scan_sees_a_deferred_batch(store: Store) -> None:
    store.mutate_batch(b"t", batch(b"1"))
    cells, _ = store.read_range_cells(
        store.table(b"t"), None, None, reverse=False, selection=None, before_ts=None, max_cells=9999
    )
    assert len(cells) == 2 * len(ROWS)


def test_a_get_of_rows_no_pending_batch_writes_does_not_wait_for_it(store: Store) -> None:
    store.mutate_batch(b"t", batch(b"old", [b"other"]))
    store.apply_pending()
    store.mutate_batch(b"t", batch(b"1"))
    assert values(store, [b"other"]) == {b"old"}
    assert store.pending_behind()  # that get left the batch where it was
    assert values(store, [b"other", ROWS[-1]]) == {b"old", b"1"}
    assert not store.pending_behind()


def test_another_store_on_the_same_directory_sees_a_deferred_batch(
    store: Store, tmp_path: Path
) -> None:
    other = open_store(tmp_path)
    try:
        store.mutate_batch(b"t", batch(b"1"))
        assert values(other) == {b"1"}
    finally:
        other.close()


def test_an_acknowledged_batch_survives_a_crash_before_it_is_applied(tmp_path: Path) -> None:
    crash = f"""
import os
from profile_store.hbase_gateway.schema import FamilyDescriptor
from profile_store.hbase_gateway.store import Store
store = Store({str(tmp_path)!r}, deferred_batch_mutations=2)
store.create_table(b"t", [FamilyDescriptor(b"cf")])
store.mutate_batch(b"t", [(b"r%04d" % i, [(False, b"cf:a", b"1"), (False, b"cf:b", b"1")])
                          for i in range(300)])
os._exit(0)  # acknowledged, never applied, never closed
"""
    subprocess.run([sys.executable, "-c", crash], check=True)
    reopened = open_store(tmp_path)
    try:
        assert cells_on_disk(reopened) == 0
        assert values(reopened) == {b"1"}
    finally:
        reopened.close()


def test_a_write_after_a_deferred_batch_is_applied_after_it(store: Store) -> None:
    store.mutate_batch(b"t", batch(b"deferred"), timestamp=5)
    store.mutate_rows(b"t", [(ROWS[0], [(False, b"cf:a", b"direct")])], 5)
    row = dict(store.get_rows(b"t", [ROWS[0]], [b"cf:a"], versions=3))[ROWS[0]]
    assert [cell[4] for cell in row] == [b"direct"]  # the same timestamp: the later put wins


def test_a_delete_after_a_deferred_batch_removes_its_cells(store: Store) -> None:
    store.mutate_batch(b"t", batch(b"1"), timestamp=5)
    store.delete_row(b"t", ROWS[0], 10)
    assert store.get_rows(b"t", [ROWS[0]], None) == []


def test_deferred_batches_are_applied_in_the_order_they_were_acknowledged(store: Store) -> None:
    for value in (b"1", b"2", b"3"):
        store.mutate_batch(b"t", batch(value), timestamp=7)
    assert values(store) == {b"3"}


def test_a_batch_of_a_table_deleted_before_it_was_applied_is_dropped(store: Store) -> None:
    old_id = store.table(b"t").table_id
    store.set_enabled(b"t", False)
    store.delete_table(b"t")
    store.create_table(b"t", [FamilyDescriptor(b"cf")])
    with store._pending.appending() as append:  # what a call racing the delete leaves behind
        append(old_id, ([(ROWS[0], 0, b"a", 1, b"stale")], []))
    store.apply_pending()
    assert not store.pending_behind()
    assert store.get_rows(b"t", [ROWS[0]], None) == []


def test_a_row_naming_a_missing_family_fails_alone(store: Store) -> None:
    bad = [(b"bad", [(False, b"nope:a", b"x"), (False, b"nope:b", b"x")])]
    with pytest.raises(GatewayIOError, match="RetriesExhaustedWithDetailsException"):
        store.mutate_batch(b"t", batch(b"1") + bad)
    assert values(store) == {b"1"}
    assert store.get_rows(b"t", [b"bad"], None) == []


def test_a_malformed_batch_is_refused_and_nothing_is_queued(store: Store) -> None:
    with pytest.raises(GatewayInternalError):
        store.mutate_batch(b"t", batch(b"1") + [(b"", [(False, b"cf:a", b"x")])])
    assert not store.pending_behind()
    assert values(store) == set()


def test_a_batch_to_a_missing_table_fails_every_row(store: Store) -> None:
    with pytest.raises(GatewayIOError, match="RetriesExhaustedWithDetailsException"):
        store.mutate_batch(b"missing", batch(b"1"))
    assert not store.pending_behind()


def test_without_an_applier_at_most_four_batches_wait(store: Store) -> None:
    waiting = []
    for i in range(10):
        store.mutate_batch(b"t", batch(b"%d" % i))
        waiting.append(store._pending.enqueued - store._pending.applied)
    assert max(waiting) == 4
    assert values(store) == {b"9"}


def test_the_applier_applies_a_batch_without_any_read(store: Store) -> None:
    applier = PendingApplier(store).start()
    try:
        store.mutate_batch(b"t", batch(b"1"))
        deadline = time.monotonic() + 10
        while cells_on_disk(store) == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cells_on_disk(store) == 2 * len(ROWS)
    finally:
        applier.stop()


def test_a_store_closed_gracefully_has_applied_everything_it_acknowledged(
    store: Store, tmp_path: Path
) -> None:
    store.mutate_batch(b"t", batch(b"1"))
    table = store.table(b"t").cells_table
    store.close()
    with sqlite3.connect(tmp_path / "hbase.sqlite3") as conn:
        assert conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 2 * len(ROWS)


def test_small_batches_are_written_before_the_call_returns(tmp_path: Path) -> None:
    store = Store(tmp_path)  # the default: batches under 1,000 mutations are not deferred
    try:
        store.create_table(b"t", [FamilyDescriptor(b"cf")])
        store.mutate_batch(b"t", batch(b"1"))
        assert not store.pending_behind()
        assert cells_on_disk(store) == 2 * len(ROWS)
    finally:
        store.close()


def test_a_large_batch_to_a_closed_store_fails_as_any_write_does(store: Store) -> None:
    store.close()
    with pytest.raises(GatewayIOError, match="store is closed"):
        store.mutate_batch(b"t", batch(b"1"))
