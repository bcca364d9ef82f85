"""Every filter of the HBase filter language, sent by happybase as a scan's filter string.

The filter language itself is specified in ``test_filter_language.py``; this module checks
the gateway's plumbing: strings arrive intact, rows and cells are filtered server-side, scan-ending
filters end the scan, and composed filters work over the wire.
"""

from __future__ import annotations

import happybase
import pytest

DATA = {
    b"a1": {b"cf:age": (b"30", 10), b"cf:name": (b"alice", 10), b"other:tag": (b"x", 10)},
    b"a2": {b"cf:age": (b"25", 20), b"cf:name": (b"bob", 20), b"other:tag": (b"y", 20)},
    b"b1": {b"cf:city": (b"paris", 30), b"cf:name": (b"carol", 30)},
    b"b2": {b"cf:name": (b"dave", 40), b"other:tag": (b"x", 40)},
    b"c1": {b"cf:age": (b"40", 50)},
}
ALL = {row: sorted(cells) for row, cells in DATA.items()}


@pytest.fixture(scope="module")
def people(gateway):
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.create_table("scan_filters_people", {"cf": {}, "other": {}})
    table = connection.table("scan_filters_people")
    for row, cells in DATA.items():
        for column, (value, ts) in cells.items():
            table.put(row, {column: value}, timestamp=ts)
    yield table
    connection.delete_table("scan_filters_people", disable=True)
    connection.close()


def scanned(table: happybase.Table, text: str, **kwargs) -> dict[bytes, list[bytes]]:
    return {row: sorted(data) for row, data in table.scan(filter=text.encode(), **kwargs)}


CASES = [
    ("PrefixFilter('a')", {k: ALL[k] for k in (b"a1", b"a2")}),
    (
        "FirstKeyOnlyFilter()",
        {
            b"a1": [b"cf:age"],
            b"a2": [b"cf:age"],
            b"b1": [b"cf:city"],
            b"b2": [b"cf:name"],
            b"c1": [b"cf:age"],
        },
    ),
    ("ColumnPrefixFilter('na')", {k: [b"cf:name"] for k in (b"a1", b"a2", b"b1", b"b2")}),
    (
        "MultipleColumnPrefixFilter('ag', 'ci')",
        {b"a1": [b"cf:age"], b"a2": [b"cf:age"], b"b1": [b"cf:city"], b"c1": [b"cf:age"]},
    ),
    (  # a1's third column (other:tag) passes the limit: family `other` is closed, `cf` goes on
        "ColumnCountGetFilter(2)",
        {
            b"a1": [b"cf:age", b"cf:name"],
            b"a2": [b"cf:age", b"cf:name"],
            b"b1": [b"cf:city", b"cf:name"],
            b"b2": [b"cf:name"],
            b"c1": [b"cf:age"],
        },
    ),
    ("ColumnCountGetFilter(1)", {b"a1": [b"cf:age"]}),
    ("PageFilter(2)", {k: ALL[k] for k in (b"a1", b"a2")}),
    (
        "ColumnPaginationFilter(1, 1)",
        {
            b"a1": [b"cf:name"],
            b"a2": [b"cf:name"],
            b"b1": [b"cf:name"],
            b"b2": [b"other:tag"],
        },
    ),
    ("InclusiveStopFilter('b1')", {k: ALL[k] for k in (b"a1", b"a2", b"b1")}),
    ("TimestampsFilter(20, 40)", {k: ALL[k] for k in (b"a2", b"b2")}),
    ("RowFilter(=, 'regexstring:.2')", {k: ALL[k] for k in (b"a2", b"b2")}),
    ("FamilyFilter(=, 'binary:other')", {k: [b"other:tag"] for k in (b"a1", b"a2", b"b2")}),
    ("QualifierFilter(=, 'binary:city')", {b"b1": [b"cf:city"]}),
    ("ValueFilter(=, 'binary:x')", {k: [b"other:tag"] for k in (b"a1", b"b2")}),
    (
        "ColumnRangeFilter('age', true, 'city', false)",
        {k: [b"cf:age"] for k in (b"a1", b"a2", b"c1")},
    ),
    ("SingleColumnValueFilter('cf', 'name', =, 'binary:bob')", {k: ALL[k] for k in (b"a2", b"c1")}),
    ("SingleColumnValueFilter('cf', 'name', =, 'binary:bob', true, true)", {b"a2": ALL[b"a2"]}),
    (
        "SingleColumnValueExcludeFilter('cf', 'name', =, 'binary:bob', true, true)",
        {b"a2": [b"cf:age", b"other:tag"]},
    ),
    ("DependentColumnFilter('other', 'tag')", {k: ALL[k] for k in (b"a1", b"a2", b"b2")}),
    ("ColumnValueFilter('cf', 'name', =, 'binary:carol')", {b"b1": [b"cf:name"]}),
    ("SKIP ValueFilter(!=, 'binary:x')", {k: ALL[k] for k in (b"a2", b"b1", b"c1")}),
    ("WHILE RowFilter(<, 'binary:b')", {k: ALL[k] for k in (b"a1", b"a2")}),
    ("PrefixFilter('a') AND ValueFilter(=, 'binary:x')", {b"a1": [b"other:tag"]}),
    (
        "(PrefixFilter('b') OR PrefixFilter('c')) AND FirstKeyOnlyFilter()",
        {b"b1": [b"cf:city"], b"b2": [b"cf:name"], b"c1": [b"cf:age"]},
    ),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[text for text, _ in CASES])
def test_filter_string_selects_rows_and_cells(people, text: str, expected) -> None:
    assert scanned(people, text) == expected


@pytest.mark.parametrize("batch_size", [1, 2])
def test_page_filter_ends_the_scan_whatever_the_batch_size(people, batch_size: int) -> None:
    assert list(scanned(people, "PageFilter(3)", batch_size=batch_size)) == [b"a1", b"a2", b"b1"]


def test_key_only_filter_empties_values(people) -> None:
    rows = dict(people.scan(filter=b"KeyOnlyFilter()"))
    assert set(rows) == set(DATA)
    assert all(value == b"" for data in rows.values() for value in data.values())


def test_filter_composes_with_range_columns_and_timestamp(people) -> None:
    assert scanned(
        people, "ValueFilter(!=, 'binary:x')", row_start=b"a2", columns=[b"other"], timestamp=40
    ) == {b"a2": [b"other:tag"]}


def test_reverse_scan_with_prefix_filter(people) -> None:
    assert list(scanned(people, "PrefixFilter('a')", reverse=True)) == [b"a2", b"a1"]


def test_reverse_scan_with_inclusive_stop_filter(people) -> None:
    assert list(scanned(people, "InclusiveStopFilter('b1')", reverse=True)) == [b"c1", b"b2", b"b1"]
