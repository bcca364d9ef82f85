"""Reads through happybase (row, rows, cells): ordering, columns, versions, timestamps, TTL."""

from __future__ import annotations

import time

import happybase
import pytest
from Hbase_thrift import IOError


def now_ms() -> int:
    return int(time.time() * 1000)


def test_missing_row_reads_as_empty(table: happybase.Table) -> None:
    assert table.row(b"nothing") == {}


def test_row_returns_every_column_of_every_family(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"other:c": b"3"})
    assert table.row(b"r") == {b"cf:a": b"1", b"cf:b": b"2", b"other:c": b"3"}


def test_values_and_keys_are_arbitrary_bytes(table: happybase.Table) -> None:
    key = bytes(range(256))
    table.put(key, {b"cf:\x00\xff": b"\x00\x01\xfe\xff"})
    assert table.row(key) == {b"cf:\x00\xff": b"\x00\x01\xfe\xff"}


def test_bare_family_selects_the_whole_family(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:": b"empty", b"other:c": b"3"})
    assert table.row(b"r", columns=[b"cf"]) == {b"cf:a": b"1", b"cf:": b"empty"}


def test_a_qualifier_named_after_its_family_narrows_the_read_to_it(
    table: happybase.Table,
) -> None:
    """As HBase's ``Get.addColumn`` after ``addFamily``: the last request for a family wins."""
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"other:c": b"3"})
    assert table.row(b"r", columns=[b"cf", b"cf:b"]) == {b"cf:b": b"2"}
    assert list(table.scan(columns=[b"cf", b"cf:b", b"other"])) == [
        (b"r", {b"cf:b": b"2", b"other:c": b"3"})
    ]


def test_a_family_named_after_its_qualifier_widens_the_read_to_it(
    table: happybase.Table,
) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2"})
    assert table.row(b"r", columns=[b"cf:b", b"cf"]) == {b"cf:a": b"1", b"cf:b": b"2"}


def test_family_with_colon_selects_only_the_empty_qualifier(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:": b"empty"})
    assert table.row(b"r", columns=[b"cf:"]) == {b"cf:": b"empty"}


def test_column_name_splits_on_the_first_colon_only(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a:b": b"1", b"cf:a": b"2"})
    assert table.row(b"r", columns=[b"cf:a:b"]) == {b"cf:a:b": b"1"}


def test_columns_select_qualifiers_across_families(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"other:c": b"3", b"other:d": b"4"})
    assert table.row(b"r", columns=[b"cf:b", b"other:c"]) == {b"cf:b": b"2", b"other:c": b"3"}


def test_row_with_no_selected_cells_is_empty(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1"})
    assert table.row(b"r", columns=[b"other"]) == {}


def test_unknown_family_in_columns_is_an_io_error(table: happybase.Table) -> None:
    with pytest.raises(IOError, match="NoSuchColumnFamilyException"):
        table.row(b"r", columns=[b"nope:q"])


def test_put_without_timestamp_gets_server_time_in_ms(table: happybase.Table) -> None:
    before = now_ms()
    table.put(b"r", {b"cf:a": b"1"})
    after = now_ms()
    (_, ts) = table.row(b"r", include_timestamp=True)[b"cf:a"]
    assert before - 5 <= ts <= after + 5


def test_row_returns_the_newest_version(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"old"}, timestamp=10)
    table.put(b"r", {b"cf:a": b"new"}, timestamp=20)
    table.put(b"r", {b"cf:a": b"older"}, timestamp=5)
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"new", 20)}


def test_same_cell_and_timestamp_written_twice_keeps_the_last_write(
    table: happybase.Table,
) -> None:
    table.put(b"r", {b"cf:a": b"first"}, timestamp=10)
    table.put(b"r", {b"cf:a": b"second"}, timestamp=10)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"second", 10)]


def test_timestamped_read_sees_only_strictly_older_cells(table: happybase.Table) -> None:
    for ts in (10, 20, 30):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    assert table.row(b"r", timestamp=30, include_timestamp=True) == {b"cf:a": (b"v20", 20)}
    assert table.row(b"r", timestamp=10) == {}


def test_cells_returns_versions_newest_first(table: happybase.Table) -> None:
    for ts in (1, 3, 2):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [
        (b"v3", 3),
        (b"v2", 2),
        (b"v1", 1),
    ]


def test_cells_returns_at_most_the_family_max_versions(table: happybase.Table) -> None:
    for ts in range(1, 6):
        table.put(b"r", {b"cf:a": b"v%d" % ts, b"other:b": b"w%d" % ts}, timestamp=ts)
    assert table.cells(b"r", b"cf:a") == [b"v5", b"v4", b"v3"]
    assert table.cells(b"r", b"other:b") == [b"w5"]


def test_cells_honours_the_versions_argument(table: happybase.Table) -> None:
    for ts in range(1, 4):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    assert table.cells(b"r", b"cf:a", versions=2) == [b"v3", b"v2"]


def test_cells_with_timestamp_counts_versions_below_it(table: happybase.Table) -> None:
    for ts in range(1, 6):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    assert table.cells(b"r", b"cf:a", timestamp=4, versions=2) == [b"v3", b"v2"]


def test_cells_of_a_missing_column_is_empty(table: happybase.Table) -> None:
    assert table.cells(b"r", b"cf:none") == []


def test_rows_keeps_request_order_and_omits_missing_rows(table: happybase.Table) -> None:
    for key in (b"a", b"b", b"c"):
        table.put(key, {b"cf:q": key})
    result = table.rows([b"c", b"missing", b"a", b"c"])
    assert result == [(b"c", {b"cf:q": b"c"}), (b"a", {b"cf:q": b"a"}), (b"c", {b"cf:q": b"c"})]


def test_rows_of_an_empty_key_list_is_empty(table: happybase.Table) -> None:
    assert table.rows([]) == {}


def test_rows_with_columns_and_timestamp(table: happybase.Table) -> None:
    table.put(b"a", {b"cf:q": b"old", b"other:x": b"o"}, timestamp=1)
    table.put(b"a", {b"cf:q": b"new"}, timestamp=5)
    table.put(b"b", {b"cf:q": b"late"}, timestamp=9)
    assert table.rows([b"a", b"b"], columns=[b"cf:q"], timestamp=5) == [(b"a", {b"cf:q": b"old"})]
    assert table.rows([b"a", b"b"], timestamp=6, include_timestamp=True) == [
        (b"a", {b"cf:q": (b"new", 5), b"other:x": (b"o", 1)})
    ]


def test_many_rows_are_fetched_in_one_call(table: happybase.Table) -> None:
    keys = [b"k%05d" % i for i in range(1200)]
    with table.batch() as batch:
        for key in keys:
            batch.put(key, {b"cf:q": key})
    result = table.rows(keys[::-1])
    assert [k for k, _ in result] == keys[::-1]
    assert all(data == {b"cf:q": key} for key, data in result)


def test_cells_older_than_the_family_ttl_are_invisible(make_table) -> None:
    table = make_table({"short": {"time_to_live": 60}, "long": {}})
    stale = now_ms() - 120_000
    table.put(b"r", {b"short:a": b"stale", b"long:a": b"kept"}, timestamp=stale)
    table.put(b"r", {b"short:b": b"fresh"})
    assert table.row(b"r") == {b"long:a": b"kept", b"short:b": b"fresh"}
    assert table.cells(b"r", b"short:a") == []


def test_ttl_hides_old_versions_but_not_newer_ones(make_table) -> None:
    table = make_table({"cf": {"time_to_live": 60, "max_versions": 5}})
    table.put(b"r", {b"cf:a": b"stale"}, timestamp=now_ms() - 120_000)
    table.put(b"r", {b"cf:a": b"fresh"})
    assert table.cells(b"r", b"cf:a") == [b"fresh"]


def test_a_row_whose_cells_all_expired_is_omitted_from_rows(make_table) -> None:
    table = make_table({"cf": {"time_to_live": 1}})
    table.put(b"gone", {b"cf:a": b"x"}, timestamp=now_ms() - 10_000)
    table.put(b"here", {b"cf:a": b"y"})
    assert table.rows([b"gone", b"here"]) == [(b"here", {b"cf:a": b"y"})]
