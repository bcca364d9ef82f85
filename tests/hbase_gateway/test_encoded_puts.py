"""``mutateRowsTs`` with each cell encoded once: the same call as happybase's objects make."""

from __future__ import annotations

import happybase
import pytest
from happybase.batch import BatchMutation, Mutation
from Hbase_thrift import IOError
from thriftpy2.protocol import TBinaryProtocol
from thriftpy2.protocol.binary import TBinaryProtocol as TPyBinaryProtocol
from thriftpy2.thrift import TClient
from thriftpy2.transport import TMemoryBuffer

from profile_store.hbase.encoded_puts import RowPuts, _send_encoded, mutate_rows_ts
from profile_store.hbase_gateway.idl import load_idl
from profile_store.hbase_gateway.process import EmbeddedGateway

SHARED = {b"cf:a": b'{"v":1}', b"cf:\x00bin": bytes(range(256)) * 3}
ROWS = [
    (b"p|one", SHARED),
    (b"p|two", SHARED),  # the same cells on another row: encoded once
    (b"\xff row", {b"cf:empty": b""}),
    (b"p|none", {}),
]


def puts_of(rows) -> RowPuts:
    puts = RowPuts()
    for row, cells in rows:
        puts.add(row, cells)
    return puts


@pytest.mark.parametrize("protocol", [TBinaryProtocol, TPyBinaryProtocol])
@pytest.mark.parametrize("count", [0, 1, len(ROWS)])
def test_an_encoded_call_is_byte_for_byte_thriftpy2s(protocol, count: int) -> None:
    rows = ROWS[:count]
    objects = TClient(load_idl().Hbase, protocol(TMemoryBuffer()))
    objects._seqid = 7
    objects._send(
        "mutateRowsTs",
        tableName=b"profiles",
        rowBatches=[
            BatchMutation(row, [Mutation(column=c, value=v) for c, v in cells.items()])
            for row, cells in rows
        ],
        timestamp=1_795_745_413_000,
        attributes={},
    )
    encoded = TClient(load_idl().Hbase, protocol(TMemoryBuffer()))
    encoded._seqid = 7
    _send_encoded(
        encoded, b"profiles", count, puts_of(rows).encoded_rows(0, count), 1_795_745_413_000
    )
    assert encoded._oprot.trans.getvalue() == objects._oprot.trans.getvalue()


@pytest.mark.parametrize("max_cells", [1, 2, 100])
def test_every_row_is_put_with_the_timestamp_over_every_transport_and_protocol(
    transport_gateway: EmbeddedGateway, max_cells: int
) -> None:
    connection = happybase.Connection(**transport_gateway.connection_kwargs())
    name = f"encoded_puts_{max_cells}"
    connection.create_table(name, {"cf": {"max_versions": 1}})
    try:
        table = connection.table(name)
        mutate_rows_ts(connection.client, table.name, puts_of(ROWS), 42, max_cells)
        read = dict(table.scan(include_timestamp=True))
        assert read == {
            row: {column: (value, 42) for column, value in cells.items()}
            for row, cells in ROWS
            if cells
        }
    finally:
        connection.delete_table(name, disable=True)
        connection.close()


def test_a_failing_call_raises_the_servers_error_and_the_connection_goes_on(
    connection: happybase.Connection, make_table
) -> None:
    with pytest.raises(IOError, match="Failed 1 action: no_such_table"):
        mutate_rows_ts(connection.client, b"no_such_table", puts_of(ROWS[:1]), 42, 10)
    table = make_table()
    mutate_rows_ts(connection.client, table.name, puts_of(ROWS[:1]), 42, 10)
    assert table.row(ROWS[0][0]) == ROWS[0][1]


def test_a_call_holds_whole_rows_up_to_the_cells_allowed_and_a_larger_row_alone() -> None:
    puts = puts_of([(b"a", {b"cf:1": b""}), (b"b", SHARED), (b"c", {}), (b"d", SHARED)])
    assert puts.calls(2) == [(0, 1), (1, 3), (3, 4)]
    assert puts.calls(1) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert puts.calls(4) == [(0, 3), (3, 4)]
    assert puts.calls(1000) == [(0, 4)]
