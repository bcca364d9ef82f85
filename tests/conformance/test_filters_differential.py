"""Every filter of HBase's filter language, with its operators and comparators, on both servers.

One table of people (two families, several versions, explicit timestamps) is written once to
the gateway and to Apache HBase; each filter string below is then scanned on both, forward and
reversed, with and without timestamps, and the answers compared value by value.
"""

from __future__ import annotations

import pytest
from differential import Differential

PEOPLE = {
    b"user1": {b"cf:name": b"ann", b"cf:age": b"31", b"cf:status": b"on", b"meta:city": b"oslo"},
    b"user2": {b"cf:name": b"bob", b"cf:age": b"27", b"cf:status": b"off"},
    b"user20": {b"cf:name": b"bea", b"meta:city": b"rome", b"meta:zip": b"00100"},
    b"user3": {b"cf:name": b"cid", b"cf:age": b"45", b"cf:status": b"on", b"meta:tag": b""},
    b"zed": {b"cf:name": b"zoe", b"cf:status": b"ON"},
    b"a\x00b": {b"cf:name": b"\x00\xff", b"meta:city": b"oslo"},
}
OLDER = {b"user1": {b"cf:status": b"off"}, b"user2": {b"cf:name": b"bo"}}

FILTERS = [
    "KeyOnlyFilter()",
    "FirstKeyOnlyFilter()",
    "PrefixFilter('user2')",
    "PrefixFilter('')",
    "ColumnPrefixFilter('st')",
    "MultipleColumnPrefixFilter('ag', 'ci')",
    "ColumnCountGetFilter(2)",
    "ColumnCountGetFilter(3)",
    "PageFilter(2)",
    "ColumnPaginationFilter(2, 1)",
    "InclusiveStopFilter('user20')",
    "TimestampsFilter(10, 30)",
    "TimestampsFilter()",
    "RowFilter(=, 'binary:user2')",
    "RowFilter(<=, 'binary:user2')",
    "RowFilter(>, 'binaryprefix:user2')",
    "RowFilter(=, 'regexstring:^user[13]$')",
    "RowFilter(!=, 'substring:ser')",
    "FamilyFilter(=, 'binary:meta')",
    "FamilyFilter(<, 'binary:d')",
    "QualifierFilter(>=, 'binary:name')",
    "QualifierFilter(=, 'substring:TA')",
    "ValueFilter(=, 'binary:on')",
    "ValueFilter(!=, 'binary:on')",
    "ValueFilter(=, 'regexstring:o.*')",
    "ValueFilter(=, 'substring:O')",
    "ValueFilter(>, 'binary:3')",
    "ColumnRangeFilter('age', true, 'name', false)",
    "ColumnRangeFilter('', false, 'c', true)",
    "SingleColumnValueFilter('cf', 'status', =, 'binary:on')",
    "SingleColumnValueFilter('cf', 'status', =, 'binary:on', true, true)",
    "SingleColumnValueFilter('cf', 'age', >, 'binary:30', false, false)",
    "SingleColumnValueFilter('cf', 'status', !=, 'regexstring:^o', true, false)",
    "SingleColumnValueExcludeFilter('cf', 'status', =, 'binary:on')",
    "SingleColumnValueExcludeFilter('cf', 'status', =, 'binary:on', true, true)",
    "DependentColumnFilter('cf', 'status')",
    "DependentColumnFilter('cf', 'status', true)",
    "DependentColumnFilter('cf', 'status', false, =, 'binary:on')",
    "ColumnValueFilter('cf', 'name', =, 'binary:bob')",
    "ColumnValueFilter('cf', 'age', >=, 'binary:30')",
    "SKIP ValueFilter(!=, 'binary:off')",
    "WHILE RowFilter(<, 'binary:user3')",
    "PrefixFilter('user') AND ValueFilter(=, 'binary:on')",
    "PrefixFilter('user2') OR FamilyFilter(=, 'binary:meta')",
    "(PrefixFilter('user1') OR PrefixFilter('zed')) AND KeyOnlyFilter()",
    "PrefixFilter('user') AND (QualifierFilter(=, 'binary:name') OR ValueFilter(=, 'binary:on'))",
    "FirstKeyOnlyFilter() AND KeyOnlyFilter()",
    "PageFilter(1) AND PrefixFilter('user2')",
]
SCANS = {
    "forward": {},
    "reversed": {"reverse": True},
    "with timestamps": {"include_timestamp": True},
    "one family": {"columns": [b"cf"]},
    "range": {"row_start": b"user1", "row_stop": b"user3"},
}


@pytest.fixture(scope="module")
def people(conformance_gateway, apache_hbase):
    pair = Differential(conformance_gateway.connection_kwargs(), apache_hbase.connection_kwargs())
    name = pair.create_table({"cf": {"max_versions": 3}, "meta": {"max_versions": 1}})

    def write(connection) -> None:
        table = connection.table(name)
        for row, data in OLDER.items():
            table.put(row, data, timestamp=10)
        for row, data in PEOPLE.items():
            table.put(row, data, timestamp=20)

    pair.same(write)
    yield pair, name
    pair.close()


@pytest.mark.parametrize("filter_string", FILTERS)
def test_a_filter_answers_the_same_on_both(people, filter_string: str) -> None:
    pair, name = people
    for scan, options in SCANS.items():
        pair.same(
            lambda c, o=options: c.table(name).scan(filter=filter_string, **o),
            f"{filter_string} ({scan})",
        )
