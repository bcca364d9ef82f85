"""A batch of Arrow cells copied into a SQLite table by SQLite itself, not a bound row per cell.

``executemany`` binds four Python objects per cell and steps the statement once per cell: about
two microseconds a cell, most of a bulk load's time in the store. Here each binary column goes
in as two parameters: its Arrow data buffer (every value back to back) and its offsets, written
as fixed-width ASCII decimals (SQLite has no function reading a binary integer, and ``substr``
of a blob is a slice at a byte position, where ``substr`` of text counts characters from the
start). One ``INSERT ... SELECT`` over a counter then cuts each cell out of the buffers.
"""

from __future__ import annotations

import sqlite3

import numpy as np
import pyarrow as pa

from .errors import GatewayIllegalArgument

SLICE_CELLS = 262_144
"""Cells per statement: keeps each bound buffer far below SQLite's 1 GB limit on a value."""


def _decimals(values: np.ndarray) -> tuple[bytes, int]:
    """``values`` (non-negative integers) as ASCII decimals of one width, back to back, and
    that width."""
    wide = values.astype(np.uint64)
    width = len(str(int(wide.max()))) if len(wide) else 1
    digits = np.empty((len(wide), width), dtype=np.uint8)
    for position in range(width - 1, -1, -1):
        digits[:, position] = wide % 10 + ord("0")
        wide //= 10
    return digits.tobytes(), width


def _buffers(column: pa.Array) -> tuple[memoryview | bytes, bytes, int]:
    """A binary column's values back to back, their offsets in that (decimals) and the width."""
    column = column.cast(pa.binary())
    _, offsets_buffer, data = column.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int32)[
        column.offset : column.offset + len(column) + 1
    ]
    start, end = int(offsets[0]), int(offsets[-1])
    values = b"" if data is None else memoryview(data)[start:end]
    text, width = _decimals(offsets - start)
    return values, text, width


def _cut(name: str, width: int) -> str:
    """The SQL for value ``n`` of a column bound as ``:{name}`` and ``:{name}_at``."""

    def offset(index: str) -> str:
        return f"CAST(substr(:{name}_at, ({index}) * {width} + 1, {width}) AS INTEGER)"

    return f"substr(:{name}, {offset('n')} + 1, {offset('n + 1')} - {offset('n')})"


def insert_cells(
    conn: sqlite3.Connection, table: str, cells: pa.Table, family_ids: pa.Array
) -> None:
    """``INSERT OR REPLACE`` into ``table`` (``row, fam, qual, value``) each cell of ``cells``
    (``row``, ``qualifier``, ``value``: binary) with its family's id (``family_ids``), in
    order: a cell repeated keeps its last value. A null is refused, naming its column."""
    for name in ("row", "qualifier", "value"):
        if cells.column(name).null_count:
            raise GatewayIllegalArgument(f"bulk load: a cell's {name} is null")
    for start in range(0, cells.num_rows, SLICE_CELLS):
        part = cells.slice(start, SLICE_CELLS)
        params: dict[str, object] = {"cells": part.num_rows}
        cuts = []
        for name in ("row", "qualifier", "value"):
            values, offsets, width = _buffers(part.column(name).combine_chunks())
            params[name], params[f"{name}_at"] = values, offsets
            cuts.append(_cut(name, width))
        ids = np.asarray(family_ids.slice(start, SLICE_CELLS).to_numpy(zero_copy_only=False))
        params["fam"], width = _decimals(ids)
        family = f"CAST(substr(:fam, n * {width} + 1, {width}) AS INTEGER)"
        conn.execute(
            "WITH RECURSIVE i(n) AS (SELECT 0 WHERE :cells > 0 "
            "UNION ALL SELECT n + 1 FROM i WHERE n + 1 < :cells) "
            f"INSERT OR REPLACE INTO {table} SELECT {cuts[0]}, {family}, {cuts[1]}, {cuts[2]} "
            "FROM i",
            params,
        )
