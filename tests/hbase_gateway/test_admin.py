"""Table administration through happybase's Connection and Table, with HBase's errors."""

from __future__ import annotations

import happybase
import pytest
from Hbase_thrift import AlreadyExists, ColumnDescriptor, IllegalArgument, IOError


def test_created_table_is_listed_and_enabled(connection: happybase.Connection, make_table) -> None:
    table = make_table()
    assert table.name in connection.tables()
    assert connection.is_table_enabled(table.name)


def test_table_names_are_listed_in_byte_order(
    connection: happybase.Connection, make_table, table_name: str
) -> None:
    base = table_name
    for suffix in ("b", "a", "C"):
        make_table(name=f"{base}_{suffix}")
    mine = [n for n in connection.tables() if n.startswith(base.encode())]
    assert mine == sorted(mine)
    assert len(mine) == 3


def test_family_settings_are_reported_back(make_table) -> None:
    table = make_table(
        {
            "cf": {"max_versions": 7, "time_to_live": 3600, "in_memory": True},
            "plain": {},
            "bloom": {"bloom_filter_type": "ROW", "compression": "SNAPPY"},
        }
    )
    families = table.families()
    assert set(families) == {b"cf", b"plain", b"bloom"}
    assert families[b"cf"]["max_versions"] == 7
    assert families[b"cf"]["time_to_live"] == 3600
    assert families[b"cf"]["in_memory"] is True
    assert families[b"cf"]["name"] == b"cf:"
    assert families[b"bloom"]["bloom_filter_type"] == b"ROW"
    assert families[b"bloom"]["compression"] == b"SNAPPY"


def test_family_defaults_match_hbase_thrift(make_table) -> None:
    settings = make_table({"cf": {}}).families()[b"cf"]
    assert settings["max_versions"] == 3
    assert settings["time_to_live"] == 2**31 - 1  # HConstants.FOREVER
    assert settings["compression"] == b"NONE"
    assert settings["bloom_filter_type"] == b"NONE"


def test_creating_an_existing_table_raises_already_exists(
    connection: happybase.Connection, make_table
) -> None:
    table = make_table()
    with pytest.raises(AlreadyExists):
        connection.create_table(table.name, {"cf": {}})


def test_creating_a_table_without_families_is_an_io_error(
    connection: happybase.Connection, table_name: str
) -> None:
    with pytest.raises(IOError, match="at least one column family"):
        connection.client.createTable(table_name.encode(), [])


def test_invalid_table_name_is_an_illegal_argument(connection: happybase.Connection) -> None:
    with pytest.raises(IllegalArgument):
        connection.create_table("bad name!", {"cf": {}})


def test_duplicate_family_is_an_illegal_argument(
    connection: happybase.Connection, table_name: str
) -> None:
    families = [ColumnDescriptor(name=b"cf:"), ColumnDescriptor(name=b"cf")]
    with pytest.raises(IllegalArgument):
        connection.client.createTable(table_name.encode(), families)


def test_non_positive_max_versions_is_an_illegal_argument(
    connection: happybase.Connection, table_name: str
) -> None:
    with pytest.raises(IllegalArgument):
        connection.create_table(table_name, {"cf": {"max_versions": 0}})


def test_deleting_an_enabled_table_is_an_io_error(
    connection: happybase.Connection, make_table
) -> None:
    table = make_table()
    with pytest.raises(IOError, match="TableNotDisabledException"):
        connection.delete_table(table.name)
    assert table.name in connection.tables()


def test_disabled_table_can_be_deleted(connection: happybase.Connection, make_table) -> None:
    table = make_table()
    connection.disable_table(table.name)
    connection.delete_table(table.name)
    assert table.name not in connection.tables()


def test_delete_with_disable_flag_removes_an_enabled_table(
    connection: happybase.Connection, make_table
) -> None:
    table = make_table()
    connection.delete_table(table.name, disable=True)
    assert table.name not in connection.tables()


def test_recreated_table_starts_empty(connection: happybase.Connection, make_table) -> None:
    table = make_table()
    table.put(b"r", {b"cf:q": b"old"})
    connection.delete_table(table.name, disable=True)
    connection.create_table(table.name, {"cf": {}})
    assert table.row(b"r") == {}


@pytest.mark.parametrize(
    "call",
    [
        lambda c: c.enable_table("no_such_table"),
        lambda c: c.disable_table("no_such_table"),
        lambda c: c.is_table_enabled("no_such_table"),
        lambda c: c.table("no_such_table").families(),
        lambda c: c.table("no_such_table").row(b"r"),
        lambda c: list(c.table("no_such_table").scan()),
        lambda c: c.table("no_such_table").counter_inc(b"r", b"cf:q"),
        lambda c: c.compact_table("no_such_table"),
    ],
    ids=[
        "enable",
        "disable",
        "is_enabled",
        "families",
        "row",
        "scan",
        "counter",
        "compact",
    ],
)
def test_unknown_table_is_table_not_found(connection: happybase.Connection, call) -> None:
    with pytest.raises(IOError, match="TableNotFoundException"):
        call(connection)


def test_deleting_an_unknown_table_says_it_does_not_exist(connection: happybase.Connection) -> None:
    with pytest.raises(IOError, match="IOException: table does not exist"):
        connection.delete_table("no_such_table", disable=False)


def test_a_put_to_an_unknown_table_fails_as_a_batch_with_every_action_failed(
    connection: happybase.Connection,
) -> None:
    """HBase's handler writes through ``Table.put(List)``: the client's batch error, not
    TableNotFoundException (checked against Apache HBase in tests/conformance)."""
    failed = pytest.raises(IOError, match="RetriesExhaustedWithDetailsException: Failed 2 actions")
    with failed, connection.table("no_such_table").batch() as batch:
        batch.put(b"a", {b"cf:q": b"v"})
        batch.put(b"b", {b"cf:q": b"v"})


def test_unknown_table_has_no_regions(connection: happybase.Connection) -> None:
    assert connection.table("no_such_table").regions() == []


def test_table_has_one_region_spanning_all_keys(
    connection: happybase.Connection, make_table
) -> None:
    (region,) = make_table().regions()
    assert region["start_key"] == b""
    assert region["end_key"] == b""
    assert region["name"].startswith(connection.table_prefix or b"")
    assert region["port"] == connection.port


def test_disable_and_enable_toggle_the_state(connection: happybase.Connection, make_table) -> None:
    table = make_table()
    connection.disable_table(table.name)
    assert not connection.is_table_enabled(table.name)
    connection.enable_table(table.name)
    assert connection.is_table_enabled(table.name)


def test_disabling_a_disabled_table_is_an_io_error(
    connection: happybase.Connection, make_table
) -> None:
    table = make_table()
    connection.disable_table(table.name)
    with pytest.raises(IOError, match="TableNotEnabledException"):
        connection.disable_table(table.name)


def test_enabling_an_enabled_table_is_an_io_error(
    connection: happybase.Connection, make_table
) -> None:
    table = make_table()
    with pytest.raises(IOError, match="TableNotDisabledException"):
        connection.enable_table(table.name)


@pytest.mark.parametrize(
    "call,error",
    [
        (lambda t: t.row(b"r"), "TableNotEnabledException"),
        (lambda t: t.cells(b"r", b"cf:q"), "TableNotEnabledException"),
        (lambda t: list(t.scan()), "TableNotEnabledException"),
        (lambda t: t.counter_inc(b"r", b"cf:q"), "TableNotEnabledException"),
        # multi-gets and mutateRows go through HBase's client batch
        (lambda t: t.rows([b"r", b"s"]), "RetriesExhaustedWithDetailsException"),
        (lambda t: t.put(b"r", {b"cf:q": b"v"}), "RetriesExhaustedWithDetailsException"),
        (lambda t: t.delete(b"r", columns=[b"cf:q"]), "RetriesExhaustedWithDetailsException"),
    ],
    ids=["row", "cells", "scan", "counter", "rows", "put", "delete"],
)
def test_disabled_table_rejects_reads_and_writes(
    connection: happybase.Connection, make_table, call, error: str
) -> None:
    table = make_table()
    table.put(b"r", {b"cf:q": b"v"})
    connection.disable_table(table.name)
    with pytest.raises(IOError, match=f"{error}.*is disabled"):
        call(table)
    connection.enable_table(table.name)
    assert table.row(b"r") == {b"cf:q": b"v"}


def test_disabled_table_keeps_its_families_visible(
    connection: happybase.Connection, make_table
) -> None:
    table = make_table({"cf": {"max_versions": 2}})
    connection.disable_table(table.name)
    assert table.families()[b"cf"]["max_versions"] == 2


def test_table_prefix_namespaces_tables(gateway, make_table, table_name: str) -> None:
    prefix = table_name
    prefixed = happybase.Connection(table_prefix=prefix, **gateway.connection_kwargs())
    try:
        prefixed.create_table("inner", {"cf": {}})
        prefixed.table("inner").put(b"r", {b"cf:q": b"v"})
        assert prefixed.tables() == [b"inner"]
        plain = happybase.Connection(**gateway.connection_kwargs())
        assert f"{prefix}_inner".encode() in plain.tables()
        assert plain.table(f"{prefix}_inner").row(b"r") == {b"cf:q": b"v"}
        plain.close()
    finally:
        prefixed.delete_table("inner", disable=True)
        prefixed.close()


@pytest.mark.parametrize("major", [False, True], ids=["minor", "major"])
def test_compaction_keeps_live_data(make_table, connection, major: bool) -> None:
    table = make_table({"cf": {"max_versions": 2}})
    for ts in (1, 2, 3):
        table.put(b"r", {b"cf:q": b"v%d" % ts}, timestamp=ts)
    connection.compact_table(table.name, major=major)
    assert table.cells(b"r", b"cf:q", include_timestamp=True) == [(b"v3", 3), (b"v2", 2)]


def test_compaction_accepts_a_region_name(make_table, connection) -> None:
    table = make_table()
    table.put(b"r", {b"cf:q": b"v"})
    connection.client.majorCompact(table.regions()[0]["name"])
    assert table.row(b"r") == {b"cf:q": b"v"}
