"""``purge_expired`` against a real embedded gateway: it deletes exactly the expired segment
cells, throttled, resumable, and never a value written after its read."""

from __future__ import annotations

import contextlib
import time

import happybase
import pytest
from known_profiles import DAY, NOW, profile_with_segments

from profile_store.profiles.expiry_purge import purge_expired
from profile_store.profiles.reads import InvalidRequest, OpenTable
from profile_store.profiles.table import SEGMENTS, UNSYNCED, column, encode_ms, profile_key


@pytest.mark.parametrize(
    ("bounds", "field"),
    [({"max_rows_per_second": 0}, "max_rows_per_second"), ({"max_rows": 0}, "max_rows")],
    ids=["rate-0", "max-rows-0"],
)
def test_invalid_bounds_raise_value_error_naming_the_field(reader, bounds, field):
    with pytest.raises(InvalidRequest) as raised:
        purge_expired(reader.open_table, **bounds)
    assert raised.value.field == field


def scratch_opener(table: happybase.Table) -> OpenTable:
    @contextlib.contextmanager
    def open_table():
        yield table

    return open_table


def segment_cells(table: happybase.Table, id: str) -> dict[bytes, bytes]:
    return table.row(profile_key(id), columns=[SEGMENTS, UNSYNCED])


def test_purge_deletes_exactly_the_expired_cells(scratch_table):
    profile_with_segments(scratch_table, "p1", {"a": NOW - 1, "b": NOW + 1}, {"c": NOW})
    profile_with_segments(scratch_table, "p2", {"d": NOW + DAY}, {"e": NOW + DAY})
    profile_with_segments(scratch_table, "p3", {"f": NOW - DAY}, {})
    report = purge_expired(scratch_opener(scratch_table), now_ms=NOW)
    assert segment_cells(scratch_table, "p1") == {b"g:b": encode_ms(NOW + 1)}
    assert segment_cells(scratch_table, "p2") == {
        b"g:d": encode_ms(NOW + DAY),
        b"u:e": encode_ms(NOW + DAY),
    }
    assert segment_cells(scratch_table, "p3") == {}
    assert (report.rows_scanned, report.rows_purged, report.cells_deleted) == (3, 2, 3)
    assert report.resume_after is None


def test_purge_never_deletes_a_value_that_is_no_expiry(scratch_table):
    scratch_table.put(profile_key("p1"), {b"g:odd": b"soon", b"g:old": encode_ms(NOW - 1)})
    report = purge_expired(scratch_opener(scratch_table), now_ms=NOW)
    assert segment_cells(scratch_table, "p1") == {b"g:odd": b"soon"}
    assert (report.cells_deleted, report.cells_unreadable) == (1, 1)


def test_purge_stops_at_max_rows_and_resumes_after_them(scratch_table):
    ids = [f"p{i}" for i in range(5)]
    for id in ids:
        profile_with_segments(scratch_table, id, {"old": NOW - 1}, {})
    open_table = scratch_opener(scratch_table)
    first = purge_expired(open_table, now_ms=NOW, max_rows=2)
    assert (first.rows_scanned, first.cells_deleted, first.resume_after) == (2, 2, "p1")
    left = [id for id in ids if segment_cells(scratch_table, id)]
    assert left == ["p2", "p3", "p4"]
    rest = purge_expired(open_table, now_ms=NOW, after=first.resume_after)
    assert (rest.rows_scanned, rest.cells_deleted, rest.resume_after) == (3, 3, None)
    assert not any(segment_cells(scratch_table, id) for id in ids)


def test_purge_sleeps_to_keep_under_the_row_rate(scratch_table):
    for i in range(6):
        profile_with_segments(scratch_table, f"p{i}", {"live": NOW + DAY}, {})
    clock = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock[0] += seconds

    report = purge_expired(
        scratch_opener(scratch_table),
        now_ms=NOW,
        max_rows_per_second=2,
        sleep=sleep,
        clock=lambda: clock[0],
    )
    assert report.rows_scanned == 6 and report.cells_deleted == 0
    assert report.rows_scanned / report.elapsed_s <= 2
    assert sleeps == [1.0, 1.0, 1.0]  # pages of 2 rows; the last page finds the end


class RacingTable:
    """A table whose scan is followed at once by a compaction rewriting a cell it returned."""

    def __init__(self, table: happybase.Table, key: bytes, cells: dict[bytes, bytes]) -> None:
        self._table, self._key, self._cells = table, key, cells

    def __getattr__(self, name: str):
        return getattr(self._table, name)

    def scan(self, **kwargs):
        rows = list(self._table.scan(**kwargs))
        time.sleep(0.005)  # the rewrite lands in a later millisecond, as any real one would
        self._table.put(self._key, self._cells)
        return iter(rows)


def test_purge_keeps_a_fresh_expiry_written_between_its_read_and_its_delete(scratch_table):
    profile_with_segments(scratch_table, "p1", {"sports": NOW - DAY, "news": NOW - DAY}, {})
    fresh = {column(SEGMENTS, "sports"): encode_ms(NOW + DAY)}
    racing = RacingTable(scratch_table, profile_key("p1"), fresh)
    report = purge_expired(scratch_opener(racing), now_ms=NOW)
    assert report.cells_deleted == 2
    assert segment_cells(scratch_table, "p1") == fresh
