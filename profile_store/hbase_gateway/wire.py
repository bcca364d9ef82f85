"""Scan replies encoded straight to Thrift's binary protocol, without a Python object per cell.

A scan reply carries thousands of rows; building a ``TRowResult``, a dict and a ``TCell`` per
cell for thriftpy2 to encode cost more than half of the gateway's time per scanned row, and
with many clients the gateway's CPU is what they share. Rows are encoded as they are read (so
``Scanner.prefetch`` encodes the next reply while the client decodes this one), and the
processor writes the reply's bytes around a message header thriftpy2 writes as usual. The
bytes are exactly what thriftpy2's binary protocol writes for the same objects (tested); the
compact protocol keeps the objects.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, MutableSequence, Sequence
from typing import Any

from thriftpy2.thrift import TMessageType

from .schema import StoredCell

# Thrift binary protocol: a field is (type: i8, id: i16) then its value; a struct ends with 0.
_STRING, _I64, _STRUCT, _MAP, _LIST = 11, 10, 12, 13, 15
_ROW_HEAD = struct.Struct(">bhi").pack  # TRowResult.row (1): string length, then the row
_COLUMNS_HEAD = struct.Struct(">bhbbi").pack  # TRowResult.columns (2): map<string, TCell>
# A map entry: name length, name, TCell.value (1) length and value, TCell.timestamp (2), end.
_LIST_HEAD = struct.Struct(">bhbi").pack  # the result's success (0): list<TRowResult>


class EncodedRows(list):
    """A reply of encoded ``TRowResult`` structs (bytes), for ``write_reply``."""


def _cell_packer(name_length: int, value_length: int) -> Any:
    """One ``pack`` for a whole map entry (name, then ``TCell``) of these lengths: the lengths
    of a table's columns and values repeat, and one call costs a third of five."""
    packer = _CELL_PACKERS.get((name_length, value_length))
    if packer is None:
        if len(_CELL_PACKERS) >= _MAX_PACKERS:
            _CELL_PACKERS.clear()
        packer = struct.Struct(f">i{name_length}sbhi{value_length}sbhqb").pack
        _CELL_PACKERS[name_length, value_length] = packer
    return packer


_CELL_PACKERS: dict[tuple[int, int], Any] = {}
_MAX_PACKERS = 4096


def encode_row(prefixes: Sequence[bytes], row: bytes, cells: list[StoredCell]) -> bytes:
    """``TRowResult(row, columns={family:qualifier: TCell(value, timestamp)})``, encoded.

    ``cells`` name each column once (a scan returns one version per column), in HBase order,
    the order of the map thriftpy2 would write.
    """
    parts = [
        _ROW_HEAD(_STRING, 1, len(row)),
        row,
        _COLUMNS_HEAD(_MAP, 2, _STRING, _STRUCT, len(cells)),
    ]
    append = parts.append
    packers = _CELL_PACKERS
    for _, fam, qualifier, timestamp, value in cells:
        name = prefixes[fam] + qualifier
        lengths = (len(name), len(value))
        pack = packers.get(lengths) or _cell_packer(*lengths)
        append(pack(lengths[0], name, _STRING, 1, lengths[1], value, _I64, 2, timestamp, 0))
    append(b"\x00")  # end of TRowResult
    return b"".join(parts)


def _row_packer(row_length: int) -> Any:
    """One ``pack`` for a row's head: ``TRowResult.row`` and the head of its ``columns`` map."""
    packer = _ROW_PACKERS.get(row_length)
    if packer is None:
        if len(_ROW_PACKERS) >= _MAX_PACKERS:
            _ROW_PACKERS.clear()
        packer = struct.Struct(f">bhi{row_length}sbhbbi").pack
        _ROW_PACKERS[row_length] = packer
    return packer


_ROW_PACKERS: dict[int, Any] = {}
_END = b"\x00"  # end of TRowResult


def encode_newest_rows(
    prefixes: Sequence[bytes],
    cells: Iterable[StoredCell],
    floors: tuple[int | None, ...] | None,
    out: MutableSequence[bytes],
) -> None:
    """Append ``encode_row`` of the newest live version of each column (what an unfiltered
    scan returns) for every row of ``cells`` to ``out``, skipping rows left empty.

    ``cells`` are whole rows one after another, each in HBase order (a forward scan's flat
    chunk as SQLite returns it). Working on the flat list spares a list and a call per row for
    grouping, which cost about a quarter of the gateway's time per scanned row. Same result as
    ``visible_cells.finish_cells(row's cells, floors, limits of 1)`` then ``encode_row``: a column's
    first cell is its newest, and once that one is past its TTL so are the older ones.
    """
    packers = _CELL_PACKERS
    row_packers = _ROW_PACKERS
    emit = out.append
    join = b"".join
    parts: list[bytes] = [b""]  # [0]: the row's head, packed once its cells are counted
    append = parts.append
    current = b""
    prev_fam = -1
    prev_qualifier = b""
    for row, fam, qualifier, timestamp, value in cells:
        if row != current:
            if len(parts) > 1:
                # _closed_row, inlined: a function call per row is a visible share of the encoding.
                pack_row = row_packers.get(len(current)) or _row_packer(len(current))
                parts[0] = pack_row(
                    _STRING, 1, len(current), current, _MAP, 2, _STRING, _STRUCT, len(parts) - 1
                )
                append(_END)
                emit(join(parts))
                parts = [b""]
                append = parts.append
            current = row
            prev_fam = -1
        elif fam == prev_fam and qualifier == prev_qualifier:
            continue  # an older version of the column just encoded
        if floors is not None:
            floor = floors[fam]
            if floor is not None and timestamp < floor:
                continue  # expired, and so are its older versions
        prev_fam, prev_qualifier = fam, qualifier
        name = prefixes[fam] + qualifier
        lengths = (len(name), len(value))
        pack = packers.get(lengths) or _cell_packer(*lengths)
        append(pack(lengths[0], name, _STRING, 1, lengths[1], value, _I64, 2, timestamp, 0))
    if len(parts) > 1:
        emit(_closed_row(current, parts))


def _closed_row(row: bytes, parts: list[bytes]) -> bytes:
    """The row's encoded bytes: ``parts`` are its cells after a slot for its head."""
    pack_row = _ROW_PACKERS.get(len(row)) or _row_packer(len(row))
    parts[0] = pack_row(_STRING, 1, len(row), row, _MAP, 2, _STRING, _STRUCT, len(parts) - 1)
    parts.append(_END)
    return b"".join(parts)


def write_reply(oprot: Any, api: str, seqid: int, rows: EncodedRows) -> None:
    """Send ``<api>_result(success=rows)`` as thriftpy2's ``send_result`` would."""
    oprot.write_message_begin(api, TMessageType.REPLY, seqid)
    oprot.trans.write(b"".join([_LIST_HEAD(_LIST, 0, _STRUCT, len(rows)), *rows, b"\x00"]))
    oprot.write_message_end()
    oprot.trans.flush()
