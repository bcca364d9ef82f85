"""Filter strings sent by unmodified happybase to the embedded gateway over a real socket."""

from __future__ import annotations

import happybase
import pytest
from thriftpy2.thrift import TApplicationException

PEOPLE = {
    b"user1": {b"cf:status": b"on", b"cf:name": b"Alice", b"meta:src": b"web"},
    b"user2": {b"cf:status": b"off", b"cf:name": b"Bob"},
    b"user3": {b"cf:name": b"Carol"},
    b"user4": {b"cf:status": b"on", b"cf:name": b"dave"},
    b"visit1": {b"cf:name": b"x", b"meta:src": b"app"},
}


@pytest.fixture(scope="module")
def conn(gateway):
    """A connection to conftest's session gateway, with this module's two tables."""
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.create_table("filters_people", {"cf": {"max_versions": 3}, "meta": {}})
    people = connection.table("filters_people")
    for row, data in PEOPLE.items():
        people.put(row, data)
    connection.create_table("filters_history", {"cf": {"max_versions": 3}})
    history = connection.table("filters_history")
    history.put(b"r1", {b"cf:a": b"old"}, timestamp=10)
    history.put(b"r1", {b"cf:a": b"new"}, timestamp=20)
    history.put(b"r2", {b"cf:a": b"old"}, timestamp=20)
    yield connection
    for name in ("filters_people", "filters_history"):
        connection.delete_table(name, disable=True)
    connection.close()


def scan_keys(conn, text, **kwargs):
    return [key for key, _ in conn.table("filters_people").scan(filter=text, **kwargs)]


def test_prefix_filter_selects_rows(conn):
    assert scan_keys(conn, "PrefixFilter('user')") == [b"user1", b"user2", b"user3", b"user4"]


def test_row_filter_compares_the_row_key(conn):
    assert scan_keys(conn, "RowFilter(<, 'binary:user3')") == [b"user1", b"user2"]


def test_single_column_value_filter_keeps_whole_rows_and_rows_lacking_the_column(conn):
    rows = dict(
        conn.table("filters_people").scan(
            filter="SingleColumnValueFilter('cf', 'status', =, 'binary:on')"
        )
    )
    assert list(rows) == [b"user1", b"user3", b"user4", b"visit1"]
    assert rows[b"user1"] == PEOPLE[b"user1"]


def test_single_column_value_filter_if_missing_drops_rows_lacking_the_column(conn):
    text = "SingleColumnValueFilter('cf', 'status', =, 'binary:on', true, true)"
    assert scan_keys(conn, text) == [b"user1", b"user4"]


def test_single_column_value_exclude_filter_omits_the_tested_column(conn):
    text = "SingleColumnValueExcludeFilter('cf', 'status', =, 'binary:on', true, true)"
    rows = dict(conn.table("filters_people").scan(filter=text))
    assert rows == {
        b"user1": {b"cf:name": b"Alice", b"meta:src": b"web"},
        b"user4": {b"cf:name": b"dave"},
    }


def test_key_only_filter_returns_keys_with_empty_values(conn):
    rows = dict(
        conn.table("filters_people").scan(filter="KeyOnlyFilter() AND PrefixFilter('user2')")
    )
    assert rows == {b"user2": {b"cf:name": b"", b"cf:status": b""}}


def test_value_filters_combine_with_or(conn):
    text = "ValueFilter(=, 'substring:ALI') OR ValueFilter(=, 'regexstring:^d.v')"
    rows = dict(conn.table("filters_people").scan(filter=text))
    assert rows == {b"user1": {b"cf:name": b"Alice"}, b"user4": {b"cf:name": b"dave"}}


def test_family_and_column_filters_select_cells(conn):
    text = "FamilyFilter(=, 'binary:meta') AND ColumnPrefixFilter('sr')"
    rows = dict(conn.table("filters_people").scan(filter=text))
    assert rows == {b"user1": {b"meta:src": b"web"}, b"visit1": {b"meta:src": b"app"}}


def test_page_filter_returns_exactly_n_rows_across_fetches(conn):
    assert scan_keys(conn, "PageFilter(3)", batch_size=1) == [b"user1", b"user2", b"user3"]


def test_while_filter_ends_the_scan_at_the_first_rejected_row(conn):
    text = "WHILE SingleColumnValueFilter('cf', 'status', !=, 'binary:off')"
    assert scan_keys(conn, text) == [b"user1"]


def test_inclusive_stop_filter_includes_the_stop_row(conn):
    assert scan_keys(conn, "InclusiveStopFilter('user2')") == [b"user1", b"user2"]


def test_column_pagination_filter_pages_columns(conn):
    rows = dict(conn.table("filters_people").scan(filter="ColumnPaginationFilter(1, 1)"))
    assert rows[b"user1"] == {b"cf:status": b"on"}
    assert rows[b"visit1"] == {b"meta:src": b"app"}
    assert b"user3" not in rows


def test_value_filter_sees_older_versions_before_the_version_limit(conn):
    rows = conn.table("filters_history").scan(
        filter="ValueFilter(=, 'binary:old')", include_timestamp=True
    )
    assert dict(rows) == {b"r1": {b"cf:a": (b"old", 10)}, b"r2": {b"cf:a": (b"old", 20)}}


def test_timestamps_filter_selects_versions(conn):
    rows = conn.table("filters_history").scan(filter="TimestampsFilter(10)", include_timestamp=True)
    assert dict(rows) == {b"r1": {b"cf:a": (b"old", 10)}}


def test_scan_batching_with_a_whole_row_filter_is_an_io_error(conn):
    table = conn.table("filters_people")
    with pytest.raises(Exception, match="hasFilterRow") as info:
        list(
            table.scan(
                filter="SingleColumnValueFilter('cf', 'status', =, 'binary:on')", scan_batching=1
            )
        )
    assert type(info.value).__name__ == "IOError"


def test_scan_batching_with_a_cell_filter_returns_partial_rows(conn):
    rows = list(conn.table("filters_people").scan(filter="PrefixFilter('user1')", scan_batching=2))
    assert [key for key, _ in rows] == [b"user1", b"user1"]
    assert {k: v for _, data in rows for k, v in data.items()} == PEOPLE[b"user1"]


def test_bad_filter_string_is_an_error_naming_position_and_problem(conn):
    with pytest.raises(TApplicationException) as raised:
        scan_keys(conn, "PrefixFilter('user') AND Nope()")
    assert b"position 25: unknown filter 'Nope'" in raised.value.message


def test_reversed_scan_with_prefix_filter_ends_below_the_prefix(conn):
    assert scan_keys(conn, "PrefixFilter('user2')", reverse=True) == [b"user2"]
