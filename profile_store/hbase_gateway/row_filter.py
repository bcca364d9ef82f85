"""How a row is shown to an HBase filter: cells, return codes, and the base class of every
filter, whose ``filter_row`` plays HBase's region scanner and query matcher.

The gateway hands over one row at a time (``RowFilter.filter_row``).  That
method calls ``filterRowKey``, walks the sorted cells applying each ReturnCode
the way the store scanner does (SKIP, NEXT_COL, NEXT_ROW, SEEK_NEXT_USING_HINT,
...), then ``filterRowCells`` and ``filterRow``, and finally the per-row
``reset``.  Why emulate rather than simplify: the filters are stateful and their
state depends on exactly which cells they were shown, so any shortcut changes
results (e.g. ``ColumnPaginationFilter`` inside an OR list, or ``PageFilter``
inside AND).

Filters are stateful: use one parsed instance per scanner, call ``reset()``
before its first row and ``set_reversed(True)`` for reversed scans.  Pass the
scan's version limit as ``filter_row(..., max_versions=n)`` to count versions
after the filter exactly as HBase's query matcher does (it then stops showing
a column's older versions to the filter); without it the caller trims versions
afterwards, which differs where a filter's state depends on older versions
(SingleColumnValueFilter with latestVersionOnly=false, DependentColumnFilter).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple


class Cell(NamedTuple):
    family: bytes
    qualifier: bytes
    timestamp: int
    value: bytes


# Filter.ReturnCode.  Numbered so that ``code < SKIP`` means "an INCLUDE variant".
INCLUDE = 0
INCLUDE_AND_NEXT_COL = 1
INCLUDE_AND_SEEK_NEXT_ROW = 2
SKIP = 3
NEXT_COL = 4
NEXT_ROW = 5
SEEK_NEXT_USING_HINT = 6


class RowFilter:
    """Base class of every filter; ``filter_row`` is the gateway's per-row entry point.

    Subclasses implement HBase's ``Filter`` methods under private snake_case
    names (``_filter_cell`` is ``filterCell`` and so on).  ``_reset_row`` is
    HBase's ``reset()``, which the region scanner calls between rows;
    ``_reset_scan`` restores the freshly constructed state for a new scanner.
    """

    name = "Filter"
    # filterAllRemaining() can ever become true (PageFilter, PrefixFilter, ...).
    _can_finish = False
    # filterAllRemaining() can flip while the cells of a row are being filtered.
    _finishes_mid_row = False
    _reversed = False

    def __init__(self) -> None:
        # Subclasses call this last, once their configuration and children exist.
        self._scan_done = False
        self._closed_families: set[bytes] = set()
        self._has_row_step = self.has_filter_row()
        self._transforming = self._transforms()
        self._reset_scan()

    # ----------------------------------------------------------- gateway API

    def reset(self) -> None:
        """Start a new scanner: forget page counters, stop flags and per-row state."""
        self._scan_done = False
        self._closed_families = set()
        self._reset_scan()

    def filter_row(
        self,
        row: bytes,
        cells: list[Cell],
        *,
        max_versions: int | None = None,
        families: Collection[bytes] | None = None,
    ) -> list[Cell] | None:
        """Filter one row the way HBase's region scanner drives a scan filter.

        ``cells`` are sorted by family, qualifier, newest timestamp first.
        Returns the kept (possibly transformed) cells, or None if the row is
        dropped.  If ``max_versions`` is given it is HBase's versionsAfterFilter
        (min of the scan's and the family's max versions): versions are then
        counted after the filter exactly like UserScanQueryMatcher does, which
        matters because later versions of a column are then never shown to
        the filter.  Without it, every version the filter includes is returned.

        HBase scans each family with its own store scanner, whose query matcher checks
        filterAllRemaining() before every cell it looks at, its next row's first cell included
        (peeked before the filter is reset between rows): a filter whose limit is reached in a
        row (ColumnCountGetFilter) closes the scanners of the families that look on, and the
        scan ends once every family of the scan (``families``; default: the row's) is closed.
        """
        if self._closed_families:
            cells = [c for c in cells if c[0] not in self._closed_families]
        if self._scan_done:
            return None
        # FilterWrapper.filterRowKey: a finished filter rejects the row key, and the
        # region scanner ends the scan when a rejected row leaves the filter finished.
        if self._all_remaining() or self._filter_row_key(row):
            if self._all_remaining():
                self._scan_done = True
            self._reset_row()
            return None

        kept: list[Cell] = []
        append = kept.append
        filter_cell = self._filter_cell
        mid_row = self._finishes_mid_row
        transforming = self._transforming
        col_family = col_qualifier = None
        versions = 0
        n = len(cells)
        i = 0
        family = None
        while i < n:
            cell = cells[i]
            if mid_row and cell[0] != family and family is not None and self._all_remaining():
                self._closed_families.add(family)  # its store peeked this row's next cell
            family = cell[0]
            if mid_row and self._all_remaining():
                # The query matcher answers DONE_SCAN: this family's store scanner closes.
                self._closed_families.add(family)
                while i < n and cells[i][0] == family:
                    i += 1
                continue
            rc = filter_cell(cell)
            i += 1
            if rc == SKIP:
                continue
            if rc in (INCLUDE, INCLUDE_AND_SEEK_NEXT_ROW):
                # mergeFilterResponse leaves INCLUDE_AND_SEEK_NEXT_ROW as the column
                # tracker's INCLUDE, then re-counts versions.
                if max_versions is not None:
                    if cell[1] == col_qualifier and cell[0] == col_family:
                        versions += 1
                    else:
                        col_family, col_qualifier, versions = cell[0], cell[1], 1
                    if versions > max_versions:
                        rc = NEXT_COL  # SEEK_NEXT_COL, cell not included
                if rc != NEXT_COL:
                    append(self._transform(cell) if transforming else cell)
                    continue
            elif rc == INCLUDE_AND_NEXT_COL:
                append(self._transform(cell) if transforming else cell)
            family = cell[0]
            if rc in (NEXT_COL, INCLUDE_AND_NEXT_COL):
                qualifier = cell[1]
                while i < n and cells[i][1] == qualifier and cells[i][0] == family:
                    i += 1
            elif rc == NEXT_ROW:
                # A store scanner holds one family: NEXT_ROW skips the rest of this
                # family only; the next family's cells of the row are still filtered.
                while i < n and cells[i][0] == family:
                    i += 1
            else:  # SEEK_NEXT_USING_HINT; no hint means "just the next cell"
                hint = self._hint(cell)
                if hint is not None:
                    while i < n and cells[i][0] == family and cells[i][1] < hint:
                        i += 1

        if kept:
            if self._has_row_step:
                # FilterWrapper.filterRowCellsWithRet: filterRow() only when cells remain.
                kept = self._filter_row_cells(kept)
                if kept and self._filter_row():
                    kept = []
            elif self._filter_row():
                kept = []
        if mid_row:  # only filters that can finish mid-row close families
            if self._all_remaining() and family is not None:
                self._closed_families.add(family)  # its store peeks its next row's first cell
            scan_families = families if families is not None else {c[0] for c in cells}
            if self._closed_families.issuperset(scan_families):
                self._scan_done = True
        self._reset_row()
        return kept or None

    def filter_all_remaining(self) -> bool:
        """True once the scan must end (checked after each row, as HBase does)."""
        return self._scan_done or self._all_remaining()

    def has_filter_row(self) -> bool:
        """HBase's hasFilterRow(): such filters cannot be combined with a batch size."""
        return False

    def is_family_essential(self, family: bytes) -> bool:
        """HBase's isFamilyEssential(): False lets the region server load that family only for
        rows the filter keeps, which HBase's reversed scans refuse."""
        return True

    def set_reversed(self, reversed: bool) -> None:
        """Filter.setReversed: HBase calls it on the scan's filter for reversed scans.

        Rows then arrive in descending order, which changes where PrefixFilter and
        InclusiveStopFilter end the scan.  As in HBase, FilterList passes the flag
        on but SkipFilter and WhileMatchFilter do not.
        """
        self._reversed = reversed

    # ------------------------------------------------- HBase Filter contract

    def _reset_scan(self) -> None:
        self._reset_row()

    def _reset_row(self) -> None:
        pass

    def _filter_row_key(self, row: bytes) -> bool:
        # FilterBase.filterRowKey(Cell): rejects rows once the filter is finished.
        return self._all_remaining()

    def _filter_cell(self, cell: Cell) -> int:
        return INCLUDE

    def _transform(self, cell: Cell) -> Cell:
        return cell

    def _transforms(self) -> bool:
        return False

    def _filter_row_cells(self, cells: list[Cell]) -> list[Cell]:
        return cells

    def _filter_row(self) -> bool:
        return False

    def _all_remaining(self) -> bool:
        return False

    def _hint(self, cell: Cell) -> bytes | None:
        """getNextCellHint: the qualifier to seek to within ``cell``'s family, or None."""
        return None

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{self.name}({fields})"
