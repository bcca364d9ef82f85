"""``mutateRowsTs`` of puts with each distinct cell encoded once.

The live profile job puts the same cells on every row of a person, thousands of rows a call.
happybase's way, a Thrift ``Mutation`` object per cell and row, a ``BatchMutation`` per row,
then thriftpy2 encoding them all, cost a large share of the job's CPU. Here each distinct cell
is encoded once, a row is its key and the encodings of its cells, and the call's bytes are
exactly what thriftpy2's binary protocol writes for the same objects (tested), so the server
sees the same call. Over the compact protocol the objects are built as happybase builds them.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from happybase.batch import BatchMutation, Mutation  # the Thrift structs happybase loads
from thriftpy2.protocol import TBinaryProtocol
from thriftpy2.protocol.binary import TBinaryProtocol as TPyBinaryProtocol
from thriftpy2.thrift import TClient, TMessageType

_METHOD = b"mutateRowsTs"
_STRING, _BOOL, _I64, _STRUCT, _MAP, _LIST = 11, 2, 10, 12, 13, 15
_VERSION_1 = -0x7FFF0000  # the strict binary protocol's 0x80010000, as a signed i32
_FIELD_STRING = struct.Struct(">bhi").pack  # field header (type, id), then a string's length
_LIST_HEAD = struct.Struct(">bhbi").pack  # field header, then the element type and count
_MESSAGE_HEAD = struct.Struct(">ii").pack
_SEQID = struct.Struct(">i").pack
_TIMESTAMP = struct.Struct(">bhq").pack
_ATTRIBUTES = struct.Struct(">bhbbi").pack  # an empty map<Text, Text>
_PUT_HEAD = b"\x02\x00\x01\x00"  # Mutation.isDelete (1) = false
_PUT_TAIL = b"\x02\x00\x04\x01\x00"  # Mutation.writeToWAL (4) = true, end of struct
_BINARY_PROTOCOLS = (TBinaryProtocol, TPyBinaryProtocol)


def _encoded_put(column: bytes, value: bytes) -> bytes:
    """``Mutation(column=column, value=value)`` in the binary protocol."""
    return b"".join(
        (
            _PUT_HEAD,
            _FIELD_STRING(_STRING, 2, len(column)),
            column,
            _FIELD_STRING(_STRING, 3, len(value)),
            value,
            _PUT_TAIL,
        )
    )


class RowPuts:
    """The rows of one ``mutateRowsTs`` call: each row's key and its cells to put."""

    def __init__(self) -> None:
        self._rows: list[tuple[bytes, Mapping[bytes, bytes]]] = []
        self._encoded: dict[tuple[bytes, bytes], bytes] = {}
        self.cells = 0

    def __len__(self) -> int:
        return len(self._rows)

    def add(self, row: bytes, cells: Mapping[bytes, bytes]) -> None:
        self._rows.append((row, cells))
        self.cells += len(cells)

    def calls(self, max_cells: int) -> list[tuple[int, int]]:
        """``(start, stop)`` of consecutive rows holding at most ``max_cells`` cells, or one
        row if it alone holds more."""
        spans: list[tuple[int, int]] = []
        start = cells = 0
        for index, (_row, row_cells) in enumerate(self._rows):
            if index > start and cells + len(row_cells) > max_cells:
                spans.append((start, index))
                start, cells = index, 0
            cells += len(row_cells)
        if start < len(self._rows):
            spans.append((start, len(self._rows)))
        return spans

    def encoded_rows(self, start: int, stop: int) -> bytes:
        """``list<BatchMutation>``'s elements for rows ``start`` to ``stop``, each distinct
        cell (the same column and value objects) encoded once for every row it goes to."""
        encoded = self._encoded
        parts: list[bytes] = []
        append = parts.append
        for row, cells in self._rows[start:stop]:
            append(_FIELD_STRING(_STRING, 1, len(row)))
            append(row)
            append(_LIST_HEAD(_LIST, 2, _STRUCT, len(cells)))
            for cell in cells.items():
                put = encoded.get(cell)
                if put is None:
                    put = encoded[cell] = _encoded_put(*cell)
                append(put)
            append(b"\x00")  # end of BatchMutation
        return b"".join(parts)

    def batch_mutations(self, start: int, stop: int) -> list[BatchMutation]:
        """The same rows as happybase's objects."""
        return [
            BatchMutation(row, [Mutation(column=c, value=v) for c, v in cells.items()])
            for row, cells in self._rows[start:stop]
        ]


def mutate_rows_ts(
    client: TClient, table: bytes, puts: RowPuts, timestamp: int, max_cells: int
) -> None:
    """Put every row of ``puts`` with ``timestamp``: whole rows, at most ``max_cells`` cells a
    call (a row holding more goes alone)."""
    binary = isinstance(client._oprot, _BINARY_PROTOCOLS)
    for start, stop in puts.calls(max_cells):
        if binary:
            _send_encoded(client, table, stop - start, puts.encoded_rows(start, stop), timestamp)
            client._recv("mutateRowsTs")  # raises the call's IOError or IllegalArgument
        else:
            client.mutateRowsTs(table, puts.batch_mutations(start, stop), timestamp, {})


def _send_encoded(client: TClient, table: bytes, rows: int, body: bytes, timestamp: int) -> None:
    """The call as ``TClient._send`` writes it: the message header, ``mutateRowsTs_args``
    (tableName, rowBatches, timestamp, attributes), then one flush of the transport."""
    message = b"".join(
        (
            _MESSAGE_HEAD(_VERSION_1 | TMessageType.CALL, len(_METHOD)),
            _METHOD,
            _SEQID(client._seqid),
            _FIELD_STRING(_STRING, 1, len(table)),
            table,
            _LIST_HEAD(_LIST, 2, _STRUCT, rows),
            body,
            _TIMESTAMP(_I64, 3, timestamp),
            _ATTRIBUTES(_MAP, 4, _STRING, _STRING, 0),
            b"\x00",  # end of the arguments
        )
    )
    transport = client._oprot.trans
    transport.write(message)
    transport.flush()
