"""Writes of one cell within one millisecond: the rules Apache HBase 2.6.1 follows, one per test.

Each test fixes the server clock, so writes land in the same millisecond whatever the machine's
speed; every test runs with batches applied by the call and with batches acknowledged from the
pending log (``--defer-batches-from``). The calls are the Thrift handler's, as happybase makes
them: a put or ``counter_set`` is ``mutateRows``, ``counter_inc`` is ``atomicIncrement``.
``tests/conformance/test_same_millisecond_differential.py`` checks the same rules against Apache
HBase itself.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from profile_store.hbase_gateway.handler import HbaseHandler
from profile_store.hbase_gateway.idl import load_idl
from profile_store.hbase_gateway.schema import FamilyDescriptor
from profile_store.hbase_gateway.store import Store

_IDL = load_idl()
TABLE, ROW = b"t", b"r"
T = 1_800_000_000_000  # the fixed server clock, in ms


class Clock:
    """A server clock the test sets; ``during`` runs once, inside the next reading."""

    def __init__(self, ms: int = T) -> None:
        self.ms = ms
        self.during = None

    def __call__(self) -> int:
        during, self.during = self.during, None
        if during is not None:
            during()
        return self.ms


def open_store(path: Path, clock: Clock, deferred: bool) -> Store:
    return Store(path, clock=clock, deferred_batch_mutations=1 if deferred else 0)


@pytest.fixture(params=["applied-by-the-call", "deferred"])
def deferred(request: pytest.FixtureRequest) -> bool:
    return request.param == "deferred"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path, clock: Clock, deferred: bool) -> Iterator[Store]:
    opened = open_store(tmp_path, clock, deferred)
    opened.create_table(
        TABLE, [FamilyDescriptor(b"cf", max_versions=3), FamilyDescriptor(b"one", max_versions=1)]
    )
    yield opened
    opened.close()


@pytest.fixture
def hbase(store: Store) -> HbaseHandler:
    return HbaseHandler(store)


def mutation(column: bytes, value: bytes | None = None) -> object:
    return _IDL.Mutation(isDelete=value is None, column=column, value=value)


def put(hbase: HbaseHandler, column: bytes, value: bytes, ts: int | None = None) -> None:
    batch = [_IDL.BatchMutation(row=ROW, mutations=[mutation(column, value)])]
    if ts is None:
        hbase.mutateRows(TABLE, batch, None)
    else:
        hbase.mutateRowsTs(TABLE, batch, ts, None)


def delete(hbase: HbaseHandler, column: bytes) -> None:
    """happybase's ``Table.delete(row, columns=[column])``: a ``mutateRows`` delete."""
    hbase.mutateRows(TABLE, [_IDL.BatchMutation(row=ROW, mutations=[mutation(column)])], None)


def counter(n: int) -> bytes:
    return struct.pack(">q", n)


def counter_set(hbase: HbaseHandler, column: bytes, n: int) -> None:
    put(hbase, column, counter(n))


def inc(hbase: HbaseHandler, column: bytes = b"cf:n", amount: int = 1) -> int:
    return hbase.atomicIncrement(TABLE, ROW, column, amount)


def versions(hbase: HbaseHandler, column: bytes = b"cf:n") -> list[tuple[bytes, int]]:
    return [(cell.value, cell.timestamp) for cell in hbase.getVer(TABLE, ROW, column, 10, None)]


def test_a_write_without_timestamp_gets_the_server_clock(hbase: HbaseHandler) -> None:
    put(hbase, b"cf:a", b"x")
    assert versions(hbase, b"cf:a") == [(b"x", T)]


def test_two_puts_in_one_millisecond_leave_one_version_holding_the_last(
    hbase: HbaseHandler,
) -> None:
    put(hbase, b"cf:a", b"first")
    put(hbase, b"cf:a", b"second")
    assert versions(hbase, b"cf:a") == [(b"second", T)]


def test_a_put_in_the_next_millisecond_is_a_new_version(hbase: HbaseHandler, clock: Clock) -> None:
    put(hbase, b"cf:a", b"first")
    clock.ms += 1
    put(hbase, b"cf:a", b"second")
    assert versions(hbase, b"cf:a") == [(b"second", T + 1), (b"first", T)]


def test_a_delete_removes_a_put_of_its_millisecond(hbase: HbaseHandler) -> None:
    put(hbase, b"cf:a", b"x")
    delete(hbase, b"cf:a")
    assert versions(hbase, b"cf:a") == []


def test_a_put_in_the_millisecond_of_a_column_delete_is_masked(hbase: HbaseHandler) -> None:
    delete(hbase, b"cf:a")
    put(hbase, b"cf:a", b"lost")
    assert versions(hbase, b"cf:a") == []


def test_a_put_in_the_millisecond_of_a_family_delete_is_masked(hbase: HbaseHandler) -> None:
    hbase.deleteAll(TABLE, ROW, b"cf", None)
    put(hbase, b"cf:a", b"lost")
    assert hbase.getRow(TABLE, ROW, None) == []


def test_a_put_in_the_millisecond_of_a_row_delete_is_masked(hbase: HbaseHandler) -> None:
    hbase.deleteAllRow(TABLE, ROW, None)
    put(hbase, b"one:z", b"lost")
    assert hbase.getRow(TABLE, ROW, None) == []


def test_a_put_in_the_millisecond_after_a_delete_is_kept(hbase: HbaseHandler, clock: Clock) -> None:
    delete(hbase, b"cf:a")
    clock.ms += 1
    put(hbase, b"cf:a", b"kept")
    assert versions(hbase, b"cf:a") == [(b"kept", T + 1)]


def test_mutate_row_deleting_and_putting_one_column_keeps_nothing(hbase: HbaseHandler) -> None:
    """HBase's handler sends the deletes, then the puts: in one millisecond the put is masked."""
    put(hbase, b"cf:a", b"old", ts=T - 5)
    hbase.mutateRow(TABLE, ROW, [mutation(b"cf:a", b"new"), mutation(b"cf:a")], None)
    assert versions(hbase, b"cf:a") == []


def test_mutate_rows_putting_and_deleting_one_column_keeps_nothing(hbase: HbaseHandler) -> None:
    """HBase's handler sends the puts, then the deletes: the delete covers the put."""
    batch = [_IDL.BatchMutation(row=ROW, mutations=[mutation(b"cf:a"), mutation(b"cf:a", b"v")])]
    hbase.mutateRows(TABLE, batch, None)
    assert versions(hbase, b"cf:a") == []


def test_increments_in_one_millisecond_take_successive_timestamps(hbase: HbaseHandler) -> None:
    assert [inc(hbase), inc(hbase), inc(hbase)] == [1, 2, 3]
    assert versions(hbase) == [(counter(3), T + 2), (counter(2), T + 1), (counter(1), T)]


def test_increments_of_one_cell_in_one_call_take_successive_timestamps(
    hbase: HbaseHandler,
) -> None:
    """``incrementRows``: HBase increments each in turn, in one millisecond here."""
    increment = _IDL.TIncrement(table=TABLE, row=ROW, column=b"cf:n", ammount=2)
    hbase.incrementRows([increment, increment])
    assert versions(hbase) == [(counter(4), T + 1), (counter(2), T)]


def test_appends_in_one_millisecond_take_successive_timestamps(hbase: HbaseHandler) -> None:
    for value in (b"a", b"b"):
        hbase.append(_IDL.TAppend(table=TABLE, row=ROW, columns=[b"cf:s"], values=[value]))
    assert versions(hbase, b"cf:s") == [(b"ab", T + 1), (b"a", T)]


def test_an_increment_writes_just_after_a_newer_timestamped_value(hbase: HbaseHandler) -> None:
    put(hbase, b"cf:n", counter(10), ts=T + 1000)
    assert inc(hbase) == 11
    assert versions(hbase)[0] == (counter(11), T + 1001)


def test_a_counter_set_after_increments_in_their_millisecond_does_not_reset_the_count(
    hbase: HbaseHandler,
) -> None:
    """The set is stamped with the clock (T), below the second increment's T + 1."""
    inc(hbase)
    inc(hbase)
    counter_set(hbase, b"cf:n", 0)
    assert inc(hbase) == 3


def test_a_put_after_increments_in_their_millisecond_becomes_an_older_version(
    hbase: HbaseHandler,
) -> None:
    inc(hbase)
    inc(hbase)
    put(hbase, b"cf:n", b"x")
    assert versions(hbase) == [(counter(2), T + 1), (b"x", T)]


def test_a_counter_set_at_the_timestamp_of_the_newest_increment_replaces_it(
    hbase: HbaseHandler, clock: Clock
) -> None:
    inc(hbase)
    inc(hbase)
    clock.ms += 1  # the clock reaches the second increment's timestamp
    counter_set(hbase, b"cf:n", 0)
    assert versions(hbase) == [(counter(0), T + 1), (counter(1), T)]
    assert inc(hbase) == 1


def test_a_timestamped_put_at_an_increments_timestamp_replaces_it(hbase: HbaseHandler) -> None:
    inc(hbase)
    hbase.mutateRowTs(TABLE, ROW, [mutation(b"cf:n", counter(7))], T, None)
    assert versions(hbase) == [(counter(7), T)]


def test_an_increment_in_the_millisecond_of_a_delete_is_hidden_by_the_marker(
    hbase: HbaseHandler, clock: Clock
) -> None:
    """It starts from 0 (the cell is deleted) and writes at the delete's timestamp."""
    inc(hbase, amount=5)
    delete(hbase, b"cf:n")
    assert inc(hbase) == 1
    assert versions(hbase) == []
    assert inc(hbase) == 1
    clock.ms += 1
    assert inc(hbase) == 1
    assert versions(hbase) == [(counter(1), T + 1)]


def test_an_increment_below_a_timestamped_delete_is_hidden_by_it(hbase: HbaseHandler) -> None:
    hbase.deleteAllTs(TABLE, ROW, b"cf:n", T + 10, None)
    assert inc(hbase) == 1
    assert versions(hbase) == []


def test_a_delete_without_timestamp_keeps_increments_ahead_of_the_clock(
    hbase: HbaseHandler,
) -> None:
    inc(hbase)
    inc(hbase)
    delete(hbase, b"cf:n")
    assert versions(hbase) == [(counter(2), T + 1)]
    assert inc(hbase) == 3


def test_a_replaced_version_does_not_count_twice_against_max_versions(
    hbase: HbaseHandler, clock: Clock
) -> None:
    put(hbase, b"cf:a", b"1")
    clock.ms += 1
    put(hbase, b"cf:a", b"2")
    put(hbase, b"cf:a", b"2 again")
    clock.ms += 1
    put(hbase, b"cf:a", b"3")
    assert versions(hbase, b"cf:a") == [(b"3", T + 2), (b"2 again", T + 1), (b"1", T)]


def test_a_family_of_one_version_shows_the_newest_increment(hbase: HbaseHandler) -> None:
    inc(hbase, b"one:n")
    inc(hbase, b"one:n")
    put(hbase, b"one:n", b"older")
    assert versions(hbase, b"one:n") == [(counter(2), T + 1)]


def test_a_timestamped_read_sees_increments_ahead_of_the_clock_by_their_timestamps(
    hbase: HbaseHandler,
) -> None:
    inc(hbase)
    inc(hbase)
    cells = hbase.getVerTs(TABLE, ROW, b"cf:n", T + 1, 10, None)
    assert [(c.value, c.timestamp) for c in cells] == [(counter(1), T)]


def test_a_scan_reads_the_cell_the_rules_leave(hbase: HbaseHandler) -> None:
    inc(hbase)
    inc(hbase)
    counter_set(hbase, b"cf:n", 0)
    scanner = hbase.scannerOpenWithScan(TABLE, _IDL.TScan(), None)
    (row,) = hbase.scannerGetList(scanner, 10)
    assert row.columns[b"cf:n"].value == counter(2)


LAST = 2**63 - 1  # Long.MAX_VALUE, also LATEST_TIMESTAMP: a write cannot ask for it


@pytest.fixture
def at_the_last_timestamp(hbase: HbaseHandler) -> HbaseHandler:
    """``cf:n`` holds 7 at Long.MAX_VALUE - 1 and, incremented, 8 at Long.MAX_VALUE."""
    put(hbase, b"cf:n", counter(7), ts=LAST - 1)
    inc(hbase)
    return hbase


def test_an_increment_of_a_cell_at_the_last_timestamp_but_one_writes_at_the_last(
    at_the_last_timestamp: HbaseHandler,
) -> None:
    (row,) = at_the_last_timestamp.getRow(TABLE, ROW, None)
    assert (row.columns[b"cf:n"].value, row.columns[b"cf:n"].timestamp) == (counter(8), LAST)


def test_reads_naming_a_column_skip_a_cell_at_the_last_timestamp(
    at_the_last_timestamp: HbaseHandler,
) -> None:
    """HBase's explicit-column tracker takes Long.MAX_VALUE for "no previous version"."""
    hbase = at_the_last_timestamp
    assert versions(hbase) == [(counter(7), LAST - 1)]
    (row,) = hbase.getRowWithColumns(TABLE, ROW, [b"cf:n"], None)
    assert row.columns[b"cf:n"].timestamp == LAST - 1
    scanner = hbase.scannerOpenWithScan(TABLE, _IDL.TScan(columns=[b"cf:n"]), None)
    (scanned,) = hbase.scannerGetList(scanner, 10)
    assert scanned.columns[b"cf:n"].timestamp == LAST - 1


def test_reads_of_a_whole_family_return_a_cell_at_the_last_timestamp(
    at_the_last_timestamp: HbaseHandler,
) -> None:
    hbase = at_the_last_timestamp
    (row,) = hbase.getRowWithColumns(TABLE, ROW, [b"cf"], None)
    assert row.columns[b"cf:n"].timestamp == LAST
    scanner = hbase.scannerOpenWithScan(TABLE, _IDL.TScan(), None)
    (scanned,) = hbase.scannerGetList(scanner, 10)
    assert scanned.columns[b"cf:n"].timestamp == LAST


def test_an_increment_counts_past_a_cell_at_the_last_timestamp(
    at_the_last_timestamp: HbaseHandler,
) -> None:
    """It reads 7 (at Long.MAX_VALUE - 1) and writes 8 at Long.MAX_VALUE again."""
    assert inc(at_the_last_timestamp) == 8
    assert inc(at_the_last_timestamp) == 8


def test_check_and_put_compares_past_a_cell_at_the_last_timestamp(
    at_the_last_timestamp: HbaseHandler,
) -> None:
    hbase = at_the_last_timestamp
    assert not hbase.checkAndPut(TABLE, ROW, b"cf:n", counter(8), mutation(b"cf:x", b"8"), None)
    assert hbase.checkAndPut(TABLE, ROW, b"cf:n", counter(7), mutation(b"cf:x", b"7"), None)


def test_two_processes_writing_one_cell_follow_the_same_rules(
    tmp_path: Path, clock: Clock, deferred: bool, store: Store
) -> None:
    """A second store on the data directory is what another worker process opens."""
    other = open_store(tmp_path, clock, deferred)
    try:
        first, second = HbaseHandler(store), HbaseHandler(other)
        inc(first)
        inc(second)
        counter_set(first, b"cf:n", 0)
        assert inc(second) == 3
        assert versions(first) == [(counter(3), T + 2), (counter(2), T + 1), (counter(0), T)]
    finally:
        other.close()


def race_a_deferred_counter_set(
    tmp_path: Path, clock_b: Callable[[], int], write_b: Callable[[HbaseHandler], object]
) -> tuple[list[object], list[tuple[bytes, int]]]:
    """Process A acknowledges ``counter_set(0)`` from the pending log, reading the clock (T),
    while process B runs ``write_b`` on ``cf:n`` (5 at T - 100, nothing pending); returns what
    B's write returned and the versions of ``cf:n`` after both."""
    clock_a = Clock()
    a = open_store(tmp_path, clock_a, deferred=True)
    b = open_store(tmp_path, clock_b, deferred=False)
    try:
        a.create_table(TABLE, [FamilyDescriptor(b"cf")])
        put(HbaseHandler(a), b"cf:n", counter(5), ts=T - 100)
        a.apply_pending()
        results: list[object] = []
        racing = threading.Thread(target=lambda: results.append(write_b(HbaseHandler(b))))

        def while_a_reads_its_clock() -> None:
            racing.start()
            # B either finishes without A's batch or waits for A's pending log to commit; A
            # goes on after this long either way.
            racing.join(timeout=2.0)

        clock_a.during = while_a_reads_its_clock
        counter_set(HbaseHandler(a), b"cf:n", 0)
        racing.join()
        return results, versions(HbaseHandler(b))
    finally:
        a.close()
        b.close()


def test_an_increment_racing_a_deferred_batch_counts_from_it(tmp_path: Path) -> None:
    """B's clock reads T + 1, later than A's: as HBase's row lock orders them, B's increment
    must count from the set, not from the old value while leaving the set below it."""
    results, cells = race_a_deferred_counter_set(tmp_path, Clock(T + 1), inc)
    assert results == [1]
    assert cells == [(counter(1), T + 1), (counter(0), T), (counter(5), T - 100)]


def test_a_put_racing_a_deferred_batch_is_stamped_after_it(tmp_path: Path) -> None:
    """B reads the clock before A does (T - 1), then again once it has waited for A's batch
    (T + 1): its put, applied after the batch, is stamped after it and is the newest value."""
    readings = iter([T - 1, T + 1])
    _, cells = race_a_deferred_counter_set(
        tmp_path, lambda: next(readings), lambda hbase: counter_set(hbase, b"cf:n", 9)
    )
    assert cells == [(counter(9), T + 1), (counter(0), T), (counter(5), T - 100)]
