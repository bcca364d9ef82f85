"""Writes whose outcome HBase defines exactly: the gateway must give the same answers."""

from __future__ import annotations

import struct

import pytest
from differential import Differential
from Hbase_thrift import Mutation

FAMILIES = {"cf": {"max_versions": 3}, "other": {"max_versions": 1}}


def test_a_put_at_the_timestamp_of_an_existing_cell_replaces_its_value(
    pair: Differential,
) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"1"}, timestamp=5))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"2"}, timestamp=5))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=3, include_timestamp=True))


def test_several_writes_of_one_cell_in_one_batch_keep_the_last(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)

    def write(connection) -> None:
        with connection.table(name).batch() as batch:
            for value in (b"1", b"2", b"3"):
                batch.put(b"r", {b"cf:a": value})

    pair.same(write)
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=3))


def test_counter_set_right_after_an_increment_replaces_the_count(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).counter_inc(b"r", b"cf:n", 10))
    pair.same(lambda c: c.table(name).counter_set(b"r", b"cf:n", 0))
    assert pair.same(lambda c: c.table(name).counter_inc(b"r", b"cf:n")) == ("ok", 1)


def test_a_cell_at_the_last_timestamp_is_read_alike(pair: Differential) -> None:
    """An increment of a cell at Long.MAX_VALUE - 1 writes at Long.MAX_VALUE, which HBase's
    reads naming the column (and the next increment, and checkAndPut) pass over."""
    name = pair.create_table(FAMILIES)
    seven, last_but_one = struct.pack(">q", 7), 2**63 - 2
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:n": seven}, timestamp=last_but_one))
    assert pair.same(lambda c: c.table(name).counter_inc(b"r", b"cf:n")) == ("ok", 8)
    assert pair.same(lambda c: c.table(name).counter_inc(b"r", b"cf:n")) == ("ok", 8)
    pair.same(lambda c: c.table(name).row(b"r", include_timestamp=True))
    pair.same(lambda c: c.table(name).row(b"r", columns=[b"cf:n"], include_timestamp=True))
    pair.same(lambda c: c.table(name).row(b"r", columns=[b"cf"], include_timestamp=True))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:n", versions=3, include_timestamp=True))
    pair.same(lambda c: c.table(name).scan(columns=[b"cf:n"], include_timestamp=True))
    checked = Mutation(isDelete=False, column=b"cf:x", value=b"seen")
    pair.same(lambda c: c.client.checkAndPut(name, b"r", b"cf:n", seven, checked, {}))
    pair.same(lambda c: c.table(name).row(b"r", include_timestamp=True))


def test_a_single_row_put_on_a_bare_family_is_left_out_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    mutations = [
        Mutation(isDelete=False, column=b"cf", value=b"v"),
        Mutation(isDelete=False, column=b"nope", value=b"v"),
        Mutation(isDelete=False, column=b"cf:a", value=b"kept"),
    ]
    pair.same(lambda c: c.client.mutateRow(name, b"r", mutations, {}))
    pair.same(lambda c: c.table(name).row(b"r"))


@pytest.mark.parametrize(
    "columns",
    [[b"cf", b"cf:b"], [b"cf:b", b"cf"], [b"cf:b", b"cf", b"cf:a"], [b"other", b"cf:a", b"cf"]],
    ids=lambda columns: ",".join(column.decode() for column in columns),
)
def test_columns_naming_a_family_and_its_qualifiers_select_alike(
    pair: Differential, columns: list[bytes]
) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"other:z": b"3"}))
    pair.same(lambda c: c.table(name).row(b"r", columns=columns))
    pair.same(lambda c: c.table(name).rows([b"r"], columns=columns))
    pair.same(lambda c: c.table(name).scan(columns=columns))


def test_an_older_put_after_a_newer_one_is_kept_as_an_older_version(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"new"}, timestamp=20))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"old"}, timestamp=10))
    pair.same(lambda c: c.table(name).row(b"r", include_timestamp=True))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=5, include_timestamp=True))


def test_a_delete_with_a_timestamp_masks_later_puts_of_older_timestamps(
    pair: Differential,
) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"v"}, timestamp=10))
    pair.same(lambda c: c.table(name).delete(b"r", columns=[b"cf:a"], timestamp=15))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"masked"}, timestamp=12))
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"kept"}, timestamp=16))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=5, include_timestamp=True))


def test_writing_to_a_missing_table_fails_alike(pair: Differential) -> None:
    pair.same(lambda c: c.table(b"no_such_table_here").put(b"r", {b"cf:a": b"1"}))
    pair.same(lambda c: c.table(b"no_such_table_here").row(b"r"))


def test_writing_to_a_missing_family_fails_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"nope:a": b"1"}))
    pair.same(lambda c: c.table(name).row(b"r"))


def test_a_bad_filter_string_fails_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.table(name).put(b"r", {b"cf:a": b"1"}))
    pair.same(lambda c: c.table(name).scan(filter=b"NoSuchFilter('x')"))
    pair.same(lambda c: c.table(name).scan(filter=b"ValueFilter(=, 'binary:1'"))


FAMILY_OPTIONS = [
    {"max_versions": 1},
    {"max_versions": 5, "in_memory": True},
    {"max_versions": 2, "time_to_live": 3600},
    {"bloom_filter_type": "ROW", "block_cache_enabled": False},
    {"bloom_filter_type": "ROWCOL", "compression": "NONE"},
    {},
]


@pytest.mark.parametrize("options", FAMILY_OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_a_created_family_is_described_alike(pair: Differential, options: dict) -> None:
    name = pair.create_table({"cf": options})
    pair.same(lambda c: c.table(name).families())


def test_a_family_ttl_hides_cells_older_than_it(pair: Differential) -> None:
    name = pair.create_table({"cf": {"max_versions": 3, "time_to_live": 3600}})
    pair.same(lambda c: c.table(name).put(b"old", {b"cf:a": b"1"}, timestamp=1000))
    pair.same(lambda c: c.table(name).put(b"new", {b"cf:a": b"2"}))
    pair.same(lambda c: c.table(name).scan())
    pair.same(lambda c: c.table(name).cells(b"old", b"cf:a", versions=3))


def test_versions_beyond_max_versions_are_not_returned(pair: Differential) -> None:
    name = pair.create_table({"cf": {"max_versions": 2}})
    for ts in (1, 2, 3, 4):
        pair.same(lambda c, ts=ts: c.table(name).put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts))
    pair.same(lambda c: c.table(name).cells(b"r", b"cf:a", versions=10, include_timestamp=True))
    pair.same(lambda c: c.table(name).row(b"r", timestamp=3, include_timestamp=True))


def test_admin_calls_on_a_missing_table_fail_alike(pair: Differential) -> None:
    missing = b"conformance_no_such_table"
    pair.same(lambda c: c.delete_table(missing, disable=False))
    pair.same(lambda c: c.enable_table(missing))
    pair.same(lambda c: c.disable_table(missing))
    pair.same(lambda c: c.is_table_enabled(missing))
    pair.same(lambda c: c.table(missing).families())
    pair.same(lambda c: c.table(missing).counter_inc(b"r", b"cf:q"))
    pair.same(lambda c: list(c.table(missing).scan()))


def test_creating_an_existing_table_fails_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: c.create_table(name, {"cf": {}}))
    pair.same(lambda c: c.delete_table(name))  # still enabled
