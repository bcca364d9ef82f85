"""Which of a row's stored cells a read shows, and the rows a flat list of cells makes.

Stored cells include what compaction has not yet reclaimed: versions beyond a family's
``max_versions`` and cells past its TTL; a read drops them (``finish_cells``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from operator import itemgetter

from .schema import StoredCell

RowCells = tuple[bytes, list[StoredCell]]

_row_of = itemgetter(0)


def finish_cells(
    cells: Sequence[StoredCell],
    floors: tuple[int | None, ...] | None,
    limits: tuple[int, ...] | None,
) -> list[StoredCell]:
    """Drop TTL-expired cells (``floors``) and versions beyond ``limits`` per column.

    ``cells`` are one row's, in HBase order (family, qualifier, newest first).
    """
    out: list[StoredCell] = []
    prev_fam = -1
    prev_qual = b""
    seen = 0
    for cell in cells:
        fam = cell[1]
        if floors is not None:
            floor = floors[fam]
            if floor is not None and cell[3] < floor:
                continue
        if limits is not None:
            if fam == prev_fam and cell[2] == prev_qual:
                seen += 1
                if seen > limits[fam]:
                    continue
            else:
                prev_fam, prev_qual, seen = fam, cell[2], 1
        out.append(cell)
    return out


def group_rows(cells: list[StoredCell], reverse: bool = False) -> list[RowCells]:
    """Group consecutive cells by row; reverse-scan rows get their cells back in HBase order."""
    rows = [(row, list(group)) for row, group in groupby(cells, _row_of)]
    if reverse:
        for _, row_cells in rows:
            row_cells.reverse()
    return rows
