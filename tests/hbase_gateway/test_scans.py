"""Scans through happybase: ranges, prefixes, reverse, batching, limits, sorted columns."""

from __future__ import annotations

import happybase
import pytest
from Hbase_thrift import IllegalArgument, IOError, TScan
from thriftpy2.thrift import TApplicationException

KEYS = [b"", b"\x00", b"a", b"a\x00", b"ab", b"b", b"ba", b"\x7f", b"\x80", b"\xff", b"\xff\xff"]


@pytest.fixture
def filled(table: happybase.Table) -> happybase.Table:
    with table.batch() as batch:
        for key in KEYS[1:]:  # the empty key is not a valid row
            batch.put(key, {b"cf:k": key, b"other:x": b"1"})
    return table


def keys(rows) -> list[bytes]:
    return [key for key, _ in rows]


def test_full_scan_returns_rows_in_raw_byte_order(filled: happybase.Table) -> None:
    assert keys(filled.scan()) == sorted(KEYS[1:])


def test_scan_start_is_inclusive_and_stop_exclusive(filled: happybase.Table) -> None:
    assert keys(filled.scan(row_start=b"a", row_stop=b"b")) == [b"a", b"a\x00", b"ab"]


def test_scan_start_need_not_exist(filled: happybase.Table) -> None:
    assert keys(filled.scan(row_start=b"aa", row_stop=b"b\x00")) == [b"ab", b"b"]


def test_scan_with_start_after_stop_is_empty(filled: happybase.Table) -> None:
    assert keys(filled.scan(row_start=b"b", row_stop=b"a")) == []


def test_scan_row_prefix(filled: happybase.Table) -> None:
    assert keys(filled.scan(row_prefix=b"a")) == [b"a", b"a\x00", b"ab"]


def test_scan_row_prefix_of_high_bytes(filled: happybase.Table) -> None:
    assert keys(filled.scan(row_prefix=b"\xff")) == [b"\xff", b"\xff\xff"]


def test_reverse_scan_returns_rows_in_descending_order(filled: happybase.Table) -> None:
    assert keys(filled.scan(reverse=True)) == sorted(KEYS[1:], reverse=True)


def test_reverse_scan_start_is_inclusive_and_stop_exclusive(filled: happybase.Table) -> None:
    assert keys(filled.scan(row_start=b"b", row_stop=b"a", reverse=True)) == [
        b"b",
        b"ab",
        b"a\x00",
    ]


def test_reverse_scan_with_row_prefix_uses_happybase_bounds(filled: happybase.Table) -> None:
    """happybase 1.3 sends start=increment(prefix) (inclusive), stop=prefix (exclusive).

    Real HBase therefore returns the row equal to increment(prefix) and drops the row equal to
    the prefix; the gateway must do the same, since happybase is used unmodified.
    """
    assert keys(filled.scan(row_prefix=b"a", reverse=True)) == [b"b", b"ab", b"a\x00"]


def test_reverse_scan_keeps_columns_in_order(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:b": b"2", b"cf:a": b"1", b"other:c": b"3"})
    ((_, data),) = table.scan(reverse=True, sorted_columns=True)
    assert list(data) == [b"cf:a", b"cf:b", b"other:c"]


def test_scan_columns_restrict_cells_and_skip_rows_without_them(table: happybase.Table) -> None:
    table.put(b"a", {b"cf:k": b"1", b"other:x": b"2"})
    table.put(b"b", {b"other:x": b"3"})
    assert list(table.scan(columns=[b"cf"])) == [(b"a", {b"cf:k": b"1"})]


def test_scan_returns_only_the_newest_version(table: happybase.Table) -> None:
    for ts in (1, 2, 3):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    assert list(table.scan(include_timestamp=True)) == [(b"r", {b"cf:a": (b"v3", 3)})]


def test_timestamped_scan_sees_only_strictly_older_cells(table: happybase.Table) -> None:
    table.put(b"a", {b"cf:k": b"old"}, timestamp=5)
    table.put(b"a", {b"cf:k": b"new"}, timestamp=10)
    table.put(b"b", {b"cf:k": b"late"}, timestamp=10)
    assert list(table.scan(timestamp=10)) == [(b"a", {b"cf:k": b"old"})]


@pytest.mark.parametrize("batch_size", [1, 2, 3, 1000])
def test_scan_result_does_not_depend_on_batch_size(
    filled: happybase.Table, batch_size: int
) -> None:
    assert keys(filled.scan(batch_size=batch_size)) == sorted(KEYS[1:])


def test_scan_limit_stops_after_that_many_rows(filled: happybase.Table) -> None:
    assert keys(filled.scan(limit=3, batch_size=2)) == sorted(KEYS[1:])[:3]


def test_scan_over_many_rows_crosses_chunks_without_loss(table: happybase.Table) -> None:
    with table.batch() as batch:
        for i in range(3000):
            batch.put(b"r%05d" % i, {b"cf:a": b"%d" % i, b"cf:b": b"x", b"other:c": b"y"})
    rows = list(table.scan(batch_size=700))
    assert keys(rows) == [b"r%05d" % i for i in range(3000)]
    assert all(len(data) == 3 for _, data in rows)
    assert keys(table.scan(reverse=True, batch_size=500)) == [
        b"r%05d" % i for i in reversed(range(3000))
    ]


def test_a_row_wider_than_a_chunk_is_returned_whole(table: happybase.Table) -> None:
    wide = {b"cf:q%05d" % i: b"v" for i in range(30_000)}
    with table.batch() as batch:
        batch.put(b"a", {b"cf:x": b"1"})
        batch.put(b"b", wide)
        batch.put(b"c", {b"cf:x": b"1"})
    rows = list(table.scan(batch_size=1))
    assert keys(rows) == [b"a", b"b", b"c"]
    assert len(rows[1][1]) == 30_000


def test_scan_batching_splits_rows_into_partial_rows(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"cf:c": b"3", b"other:d": b"4"})
    table.put(b"s", {b"cf:a": b"5"})
    rows = list(table.scan(scan_batching=3, sorted_columns=True))
    assert [(k, list(d)) for k, d in rows] == [
        (b"r", [b"cf:a", b"cf:b", b"cf:c"]),
        (b"r", [b"other:d"]),
        (b"s", [b"cf:a"]),
    ]


def test_scan_batching_with_a_row_filter_is_an_io_error(filled: happybase.Table) -> None:
    with pytest.raises(IOError, match="hasFilterRow"):
        list(filled.scan(scan_batching=2, filter=b"SingleColumnValueFilter('cf','k',=,'binary:a')"))


def test_scan_batching_with_a_cell_filter_is_allowed(filled: happybase.Table) -> None:
    assert keys(filled.scan(scan_batching=1, filter=b"PrefixFilter('a')")) == [
        b"a",
        b"a",
        b"a\x00",
        b"a\x00",
        b"ab",
        b"ab",
    ]


def test_sorted_columns_come_in_family_then_qualifier_order(table: happybase.Table) -> None:
    table.put(b"r", {b"other:a": b"1", b"cf:z": b"2", b"cf:b": b"3", b"cf:": b"4"})
    ((_, data),) = table.scan(sorted_columns=True)
    assert list(data.items()) == [
        (b"cf:", b"4"),
        (b"cf:b", b"3"),
        (b"cf:z", b"2"),
        (b"other:a", b"1"),
    ]


def test_sorted_columns_with_timestamps(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1"}, timestamp=42)
    ((_, data),) = table.scan(sorted_columns=True, include_timestamp=True)
    assert data == {b"cf:a": (b"1", 42)}


def test_expired_cells_are_not_scanned(make_table) -> None:
    table = make_table({"cf": {"time_to_live": 60}})
    table.put(b"old", {b"cf:a": b"x"}, timestamp=1)
    table.put(b"new", {b"cf:a": b"y"})
    assert keys(table.scan()) == [b"new"]


def test_filter_selects_rows(filled: happybase.Table) -> None:
    assert keys(filled.scan(filter=b"RowFilter(>=, 'binary:b')")) == [
        b"b",
        b"ba",
        b"\x7f",
        b"\x80",
        b"\xff",
        b"\xff\xff",
    ]


def test_filter_syntax_error_is_an_internal_error_naming_the_position(
    filled: happybase.Table,
) -> None:
    with pytest.raises(TApplicationException) as raised:
        list(filled.scan(filter=b"PrefixFilter('a'"))
    assert raised.value.message.startswith(b"Internal error processing scannerOpenWithScan: ")
    assert b"position" in raised.value.message


def test_exhausted_scanner_returns_empty_lists(
    connection: happybase.Connection, filled: happybase.Table
) -> None:
    client = connection.client
    scanner = client.scannerOpenWithScan(filled.name, TScan(startRow=b"b", stopRow=b"c"), {})
    assert [r.row for r in client.scannerGetList(scanner, 10)] == [b"b", b"ba"]
    assert client.scannerGetList(scanner, 10) == []
    assert client.scannerGetList(scanner, 10) == []
    client.scannerClose(scanner)


def test_scanner_get_returns_one_row_at_a_time(
    connection: happybase.Connection, filled: happybase.Table
) -> None:
    client = connection.client
    scanner = client.scannerOpenWithScan(filled.name, TScan(startRow=b"a"), {})
    assert [r.row for r in client.scannerGet(scanner)] == [b"a"]
    assert [r.row for r in client.scannerGet(scanner)] == [b"a\x00"]
    client.scannerClose(scanner)


def test_unknown_scanner_id_is_an_illegal_argument(connection: happybase.Connection) -> None:
    with pytest.raises(IllegalArgument, match="scanner ID is invalid"):
        connection.client.scannerGetList(987654, 1)


def test_closed_scanner_id_is_an_illegal_argument(
    connection: happybase.Connection, filled: happybase.Table
) -> None:
    client = connection.client
    scanner = client.scannerOpenWithScan(filled.name, TScan(), {})
    client.scannerClose(scanner)
    with pytest.raises(IllegalArgument):
        client.scannerGetList(scanner, 1)
    with pytest.raises(IllegalArgument):
        client.scannerClose(scanner)
