"""Every transport x protocol combination, and every happybase compat mode, end to end."""

from __future__ import annotations

import happybase
import pytest
from Hbase_thrift import IOError

from profile_store.hbase_gateway.process import EmbeddedGateway

COMPAT_MODES = ["0.90", "0.92", "0.94", "0.96", "0.98"]


@pytest.fixture
def wire_table(transport_gateway: EmbeddedGateway, table_name: str):
    connection = happybase.Connection(**transport_gateway.connection_kwargs())
    connection.create_table(table_name, {"cf": {"max_versions": 2}})
    yield connection.table(table_name)
    connection.delete_table(table_name, disable=True)
    connection.close()


def test_put_get_and_scan_over_every_wire_mode(wire_table: happybase.Table) -> None:
    with wire_table.batch() as batch:
        for i in range(300):
            batch.put(b"r%03d" % i, {b"cf:a": b"\x00\xff" * i, b"cf:b": b"%d" % i})
    assert wire_table.row(b"r007") == {b"cf:a": b"\x00\xff" * 7, b"cf:b": b"7"}
    assert [k for k, _ in wire_table.scan(batch_size=64)] == [b"r%03d" % i for i in range(300)]
    assert wire_table.rows([b"r001", b"r002"])[1][1][b"cf:b"] == b"2"


def test_counters_and_versions_over_every_wire_mode(wire_table: happybase.Table) -> None:
    assert wire_table.counter_inc(b"c", b"cf:n", value=-(2**40)) == -(2**40)
    for ts in (1, 2, 3):
        wire_table.put(b"v", {b"cf:a": b"%d" % ts}, timestamp=ts)
    assert wire_table.cells(b"v", b"cf:a", include_timestamp=True) == [(b"3", 3), (b"2", 2)]


def test_errors_over_every_wire_mode_leave_the_connection_usable(
    wire_table: happybase.Table,
) -> None:
    with pytest.raises(IOError):
        wire_table.put(b"r", {b"nope:a": b"1"})
    wire_table.put(b"r", {b"cf:a": b"1"})
    assert wire_table.row(b"r") == {b"cf:a": b"1"}


@pytest.fixture(params=COMPAT_MODES)
def compat_table(request: pytest.FixtureRequest, gateway: EmbeddedGateway, table_name: str):
    connection = happybase.Connection(compat=request.param, **gateway.connection_kwargs())
    connection.create_table(table_name, {"cf": {"max_versions": 3}, "other": {}})
    yield connection.table(table_name)
    connection.delete_table(table_name, disable=True)
    connection.close()


def test_reads_and_writes_in_every_compat_mode(compat_table: happybase.Table) -> None:
    with compat_table.batch() as batch:
        batch.put(b"a", {b"cf:x": b"1", b"other:y": b"2"})
        batch.put(b"b", {b"cf:x": b"3"})
    compat_table.put(b"a", {b"cf:x": b"0"}, timestamp=1)
    assert compat_table.row(b"a") == {b"cf:x": b"1", b"other:y": b"2"}
    assert compat_table.row(b"a", timestamp=2) == {b"cf:x": b"0"}
    assert compat_table.rows([b"b", b"a"], columns=[b"cf:x"]) == [
        (b"b", {b"cf:x": b"3"}),
        (b"a", {b"cf:x": b"1"}),
    ]
    assert compat_table.cells(b"a", b"cf:x") == [b"1", b"0"]
    assert compat_table.counter_inc(b"c", b"cf:n", value=2) == 2
    compat_table.delete(b"b")
    assert compat_table.row(b"b") == {}


def test_scans_in_every_compat_mode(compat_table: happybase.Table) -> None:
    """0.90 uses scannerOpen, scannerOpenTs, scannerOpenWithStop and scannerOpenWithStopTs."""
    for key in (b"a", b"b", b"c", b"d"):
        compat_table.put(key, {b"cf:x": key, b"other:y": b"o"}, timestamp=10)
    compat_table.put(b"e", {b"cf:x": b"late"}, timestamp=20)

    def keys(**kwargs) -> list[bytes]:
        return [k for k, _ in compat_table.scan(batch_size=2, **kwargs)]

    assert keys() == [b"a", b"b", b"c", b"d", b"e"]
    assert keys(row_start=b"b") == [b"b", b"c", b"d", b"e"]
    assert keys(row_start=b"b", row_stop=b"d") == [b"b", b"c"]
    assert keys(timestamp=20) == [b"a", b"b", b"c", b"d"]
    assert keys(row_start=b"b", row_stop=b"e", timestamp=11) == [b"b", b"c", b"d"]
    assert keys(row_prefix=b"c") == [b"c"]
    assert list(compat_table.scan(row_start=b"d", columns=[b"other"])) == [
        (b"d", {b"other:y": b"o"})
    ]
