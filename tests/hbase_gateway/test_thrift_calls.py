"""IDL calls happybase never makes, issued on happybase's own Thrift client (HBase semantics)."""

from __future__ import annotations

import struct

import happybase
import pytest
from Hbase_thrift import IOError, Mutation, TAppend, TIncrement


@pytest.fixture
def client(connection: happybase.Connection):
    return connection.client


def test_get_returns_the_newest_cell(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"old"}, timestamp=1)
    table.put(b"r", {b"cf:a": b"new"}, timestamp=2)
    assert [(c.value, c.timestamp) for c in client.get(table.name, b"r", b"cf:a", {})] == [
        (b"new", 2)
    ]


def test_get_row_and_get_rows_return_whole_rows(client, table: happybase.Table) -> None:
    table.put(b"a", {b"cf:x": b"1"})
    table.put(b"b", {b"other:y": b"2"})
    (row,) = client.getRow(table.name, b"a", {})
    assert row.row == b"a" and {k: c.value for k, c in row.columns.items()} == {b"cf:x": b"1"}
    assert [r.row for r in client.getRows(table.name, [b"b", b"zz", b"a"], {})] == [b"b", b"a"]


def test_get_row_ts_and_get_rows_ts_read_strictly_older_cells(
    client, table: happybase.Table
) -> None:
    table.put(b"a", {b"cf:x": b"old"}, timestamp=5)
    table.put(b"a", {b"cf:x": b"new"}, timestamp=9)
    (row,) = client.getRowTs(table.name, b"a", 9, {})
    assert row.columns[b"cf:x"].value == b"old"
    assert client.getRowsTs(table.name, [b"a"], 5, {}) == []


def test_mutate_row_applies_deletes_before_puts(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"old"}, timestamp=1)
    mutations = [
        Mutation(isDelete=False, column=b"cf:b", value=b"new"),
        Mutation(isDelete=True, column=b"cf:a"),
    ]
    client.mutateRowTs(table.name, b"r", mutations, 10, {})
    assert table.row(b"r", include_timestamp=True) == {b"cf:b": (b"new", 10)}


def test_mutate_row_without_timestamp_uses_server_time(client, table: happybase.Table) -> None:
    client.mutateRow(table.name, b"r", [Mutation(column=b"cf:a", value=b"v")], {})
    (_, ts) = table.row(b"r", include_timestamp=True)[b"cf:a"]
    assert ts > 1_600_000_000_000


def test_delete_all_removes_one_column(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2"})
    client.deleteAll(table.name, b"r", b"cf:a", {})
    assert table.row(b"r") == {b"cf:b": b"2"}


def test_delete_all_ts_removes_versions_at_or_before_it(client, table: happybase.Table) -> None:
    for ts in (1, 2, 3):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    client.deleteAllTs(table.name, b"r", b"cf:a", 2, {})
    assert table.cells(b"r", b"cf:a") == [b"v3"]


def test_delete_all_row_removes_every_family(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"other:b": b"2"})
    client.deleteAllRow(table.name, b"r", {})
    assert table.row(b"r") == {}


def test_delete_all_row_ts_keeps_newer_cells(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"old"}, timestamp=1)
    table.put(b"r", {b"other:b": b"new"}, timestamp=3)
    client.deleteAllRowTs(table.name, b"r", 2, {})
    assert table.row(b"r") == {b"other:b": b"new"}


def test_increment_and_increment_rows_add_to_counters(client, table: happybase.Table) -> None:
    client.increment(TIncrement(table=table.name, row=b"r", column=b"cf:n", ammount=5))
    client.incrementRows(
        [
            TIncrement(table=table.name, row=b"r", column=b"cf:n", ammount=2),
            TIncrement(table=table.name, row=b"s", column=b"cf:n", ammount=-1),
        ]
    )
    assert table.counter_get(b"r", b"cf:n") == 7
    assert table.counter_get(b"s", b"cf:n") == -1


def test_check_and_put_puts_when_the_value_matches(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"expected"})
    put = Mutation(column=b"cf:b", value=b"written")
    assert client.checkAndPut(table.name, b"r", b"cf:a", b"expected", put, {}) is True
    assert table.row(b"r")[b"cf:b"] == b"written"


def test_check_and_put_does_nothing_when_the_value_differs(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"actual"})
    put = Mutation(column=b"cf:b", value=b"written")
    assert client.checkAndPut(table.name, b"r", b"cf:a", b"expected", put, {}) is False
    assert b"cf:b" not in table.row(b"r")


def test_check_and_put_without_value_requires_absence(client, table: happybase.Table) -> None:
    put = Mutation(column=b"cf:a", value=b"first")
    assert client.checkAndPut(table.name, b"r", b"cf:a", None, put, {}) is True
    put = Mutation(column=b"cf:a", value=b"second")
    assert client.checkAndPut(table.name, b"r", b"cf:a", None, put, {}) is False
    assert table.row(b"r") == {b"cf:a": b"first"}


def test_append_concatenates_and_returns_new_values(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"abc"})
    cells = client.append(
        TAppend(table=table.name, row=b"r", columns=[b"cf:a", b"cf:b"], values=[b"def", b"x"])
    )
    assert [c.value for c in cells] == [b"abcdef", b"x"]
    assert table.row(b"r") == {b"cf:a": b"abcdef", b"cf:b": b"x"}


def test_get_row_or_before_finds_the_closest_earlier_row(client, table: happybase.Table) -> None:
    table.put(b"b", {b"cf:a": b"at-b"})
    table.put(b"d", {b"cf:a": b"at-d", b"other:x": b"y"})
    assert [c.value for c in client.getRowOrBefore(table.name, b"c", b"cf")] == [b"at-b"]
    assert [c.value for c in client.getRowOrBefore(table.name, b"d", b"cf")] == [b"at-d"]
    assert client.getRowOrBefore(table.name, b"a", b"cf") == []


def test_get_region_info_of_a_meta_search_row(client, table: happybase.Table) -> None:
    region = client.getRegionInfo(table.name + b",somekey,99999999999999")
    assert region.startKey == b"" and region.endKey == b""
    assert region.name.startswith(table.name + b",,")


def test_get_region_info_of_an_unknown_table_is_an_io_error(client) -> None:
    with pytest.raises(IOError):
        client.getRegionInfo(b"no_such_table,,1")


def test_scanner_open_with_prefix_returns_only_prefixed_rows(
    client, table: happybase.Table
) -> None:
    for key in (b"a", b"ab", b"abc", b"b"):
        table.put(key, {b"cf:x": b"1"})
    scanner = client.scannerOpenWithPrefix(table.name, b"ab", None, {})
    assert [r.row for r in client.scannerGetList(scanner, 10)] == [b"ab", b"abc"]
    client.scannerClose(scanner)


def test_mutate_row_skips_a_put_on_a_bare_family_and_applies_the_rest(
    client, table: happybase.Table
) -> None:
    """HBase's handler logs such a put and leaves it out of the row's Put."""
    mutations = [Mutation(column=b"cf", value=b"v"), Mutation(column=b"cf:a", value=b"kept")]
    client.mutateRow(table.name, b"r", mutations, {})
    assert table.row(b"r") == {b"cf:a": b"kept"}


def test_mutate_row_skips_a_put_on_a_bare_family_the_table_lacks(
    client, table: happybase.Table
) -> None:
    client.mutateRow(table.name, b"r", [Mutation(column=b"nope", value=b"v")], {})
    assert table.row(b"r") == {}


def test_atomic_increment_reports_a_non_counter_cell(client, table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": struct.pack(">i", 1)})
    with pytest.raises(IOError, match="4 bytes wide"):
        client.atomicIncrement(table.name, b"r", b"cf:a", 1)
