"""HBase filter language (Thrift ``filterString``) for the embedded gateway.

``parse_filter`` turns a filter string into a tree of filter objects with the
semantics of HBase 2.x: the grammar of ``ParseFilter``, the argument forms of
each filter's ``createFilterFromArguments``, and per filter the exact
``filterRowKey`` / ``filterCell`` / ``transformCell`` / ``filterRowCells`` /
``filterRow`` / ``filterAllRemaining`` / ``reset`` behaviour, including
``FilterListWithAND`` / ``FilterListWithOR`` return-code merging, ``SkipFilter``
and ``WhileMatchFilter``.

The gateway hands over one row at a time (``RowFilter.filter_row``).  That
method plays the part of HBase's region scanner and query matcher: it calls
``filterRowKey``, walks the sorted cells applying each ReturnCode the way the
store scanner does (SKIP, NEXT_COL, NEXT_ROW, SEEK_NEXT_USING_HINT, ...), then
``filterRowCells`` and ``filterRow``, and finally the per-row ``reset``.  Why
emulate rather than simplify: the filters are stateful and their state depends
on exactly which cells they were shown, so any shortcut changes results (e.g.
``ColumnPaginationFilter`` inside an OR list, or ``PageFilter`` inside AND).

Grammar (precedence as in HBase: SKIP/WHILE bind tighter than AND, AND
tighter than OR)::

    filter   := or_expr
    or_expr  := and_expr ('OR' and_expr)*
    and_expr := unary ('AND' unary)*
    unary    := 'SKIP' unary | 'WHILE' unary | '(' or_expr ')' | Name '(' [arg (',' arg)*] ')'
    arg      := 'quoted, '' escapes a quote' | bare (number, true/false, <, <=, =, !=, >=, >)

Comparators: ``binary:`` (lexicographic bytes), ``binaryprefix:`` (compares the
first len(value) bytes), ``regexstring:`` and ``substring:`` (only = and !=
for the compare filters, as in HBase; ``substring`` is case-insensitive).

Intentional deviations from HBase (everything else is meant to match):

* Arguments must be separated by exactly one comma.  HBase's tokenizer also
  accepts ``F('a' 'b')`` and ``F('a',,'b')``; we reject them with a position.
* ``regexstring:`` uses Python ``re`` instead of ``java.util.regex``.  Kept
  from Java: DOTALL, search (``find()``) rather than full match, cell bytes
  decoded as UTF-8 with replacement characters.  Different: Java-only syntax
  (``\\p{Alpha}``, ``\\Q..\\E``, ``(?<name>..)``, ``\\z``) is rejected at parse
  time; ``\\Z``, ``\\b``, ``\\w`` and case folding follow Python's rules.
* When a filter reports ``filterAllRemaining()`` in the middle of a row
  (``ColumnCountGetFilter`` past its limit, ``WhileMatchFilter`` after a
  miss), HBase closes the store scanner of each column family that reaches
  its next cell, so families already finished for this row live on in later
  rows.  We drop the rest of the row and end the scan, which is identical
  whenever the row's remaining cells and all later rows' cells belong to the
  families that were closed (always so for single-family tables).
* ``PageFilter`` is per region in HBase; the gateway has one region, so a page
  is exact.
* In reversed scans HBase's FilterList also negates its cell comparison when
  choosing between several sub-filters' seek hints; we always seek forward
  within a row, as the cells of a row are forward-sorted either way.
* HBase's ``RowFilter`` is ``RowKeyFilter`` here because ``RowFilter`` is the
  name of the gateway-facing base class.  ``ColumnValueFilter`` (registered
  by HBase 2.x's ``ParseFilter`` as a 19th filter) is supported as well.

Filters are stateful: use one parsed instance per scanner, call ``reset()``
before its first row and ``set_reversed(True)`` for reversed scans.  Pass the
scan's version limit as ``filter_row(..., max_versions=n)`` to count versions
after the filter exactly as HBase's query matcher does (it then stops showing
a column's older versions to the filter); without it the caller trims versions
afterwards, which differs where a filter's state depends on older versions
(SingleColumnValueFilter with latestVersionOnly=false, DependentColumnFilter).
"""

from __future__ import annotations

import operator
import re
import struct
from bisect import bisect_right
from collections.abc import Callable, Collection
from functools import partial
from typing import NamedTuple

__all__ = [
    "Cell",
    "ColumnCountGetFilter",
    "Comparator",
    "ColumnPaginationFilter",
    "ColumnPrefixFilter",
    "ColumnRangeFilter",
    "ColumnValueFilter",
    "DependentColumnFilter",
    "FamilyFilter",
    "FilterList",
    "FilterListWithAND",
    "FilterListWithOR",
    "FilterSyntaxError",
    "FirstKeyOnlyFilter",
    "InclusiveStopFilter",
    "KeyOnlyFilter",
    "MultipleColumnPrefixFilter",
    "PageFilter",
    "PrefixFilter",
    "QualifierFilter",
    "RowFilter",
    "RowKeyFilter",
    "SingleColumnValueExcludeFilter",
    "SingleColumnValueFilter",
    "SkipFilter",
    "TimestampsFilter",
    "ValueFilter",
    "WhileMatchFilter",
    "parse_filter",
]


class FilterSyntaxError(ValueError):
    """A filter string that HBase would reject; names the 0-based offset and the problem."""

    def __init__(self, position: int, problem: str) -> None:
        super().__init__(f"invalid filter string at position {position}: {problem}")
        self.position = position
        self.problem = problem


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

_I, _INC, _INR, _S, _NC, _NR, _H = range(7)
# FilterListWithAND.mergeReturnCode, indexed [previous merged code][sub-filter code]
# ("the maximal step rule"); transcribed from the table in HBase's Javadoc.
_AND_MERGE = (
    (_I, _INC, _INR, _S, _NC, _NR, _H),  # previous INCLUDE
    (_INC, _INC, _INR, _NC, _NC, _NR, _H),  # previous INCLUDE_AND_NEXT_COL
    (_INR, _INR, _INR, _NR, _NR, _NR, _H),  # previous INCLUDE_AND_SEEK_NEXT_ROW
    (_S, _NC, _NR, _S, _NC, _NR, _H),  # previous SKIP
    (_NC, _NC, _NR, _NC, _NC, _NR, _H),  # previous NEXT_COL
    (_NR, _NR, _NR, _NR, _NR, _NR, _H),  # previous NEXT_ROW
    (_H, _H, _H, _H, _H, _H, _H),  # previous SEEK_NEXT_USING_HINT
)
# FilterListWithOR.mergeReturnCode ("the minimal step rule"), same indexing.
_OR_MERGE = (
    (_I, _I, _I, _I, _I, _I, _I),
    (_I, _INC, _INC, _I, _INC, _INC, _I),
    (_I, _INC, _INR, _I, _INC, _INR, _I),
    (_I, _I, _I, _S, _S, _S, _S),
    (_I, _INC, _INC, _S, _NC, _NC, _S),
    (_I, _INC, _INR, _S, _NC, _NR, _S),
    (_I, _I, _I, _S, _S, _S, _H),
)

_INT32 = struct.Struct(">i")
_LONG_MAX = 2**63 - 1
_INT_MAX = 2**31 - 1


# --------------------------------------------------------------------------- base


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


# --------------------------------------------------------------- comparators

# Keep a cell iff OP(cell_bytes, comparator_value).  HBase computes
# ``comparator.compareTo(cell)`` (comparator value on the left) and filters the
# cell out when CompareFilter.compare() says so; written the other way round
# that is exactly "keep iff cell OP value", e.g. RowFilter(<, 'binary:b') keeps
# row keys below 'b'.  ``_FLIPPED`` lets functools.partial bind the value first.
_OPS: dict[str, Callable[[object, object], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    "=": operator.eq,
    "!=": operator.ne,
    ">=": operator.ge,
    ">": operator.gt,
}
_FLIPPED = {
    "<": operator.gt,
    "<=": operator.ge,
    "=": operator.eq,
    "!=": operator.ne,
    ">=": operator.le,
    ">": operator.lt,
}
_COMPARATOR_TYPES = ("binary", "binaryprefix", "regexstring", "substring")


class Comparator(NamedTuple):
    """A parsed ``type:value`` comparator plus the compare op it is used with."""

    kind: str
    value: bytes
    op: str
    test: Callable[[bytes], bool]  # True when the cell passes


def _make_test(kind: str, value: bytes, op: str, pattern: re.Pattern[str] | None) -> Callable:
    if kind == "binary":
        return partial(_FLIPPED[op], value)
    if kind == "binaryprefix":
        size = len(value)
        flipped = _FLIPPED[op]
        return lambda data: flipped(value, data[:size])
    if kind == "regexstring":
        search = pattern.search  # type: ignore[union-attr]

        def matches(data: bytes) -> bool:
            return search(data.decode("utf-8", "replace")) is not None

    else:
        needle = value.decode("utf-8", "replace").lower()

        def matches(data: bytes) -> bool:
            return needle in data.decode("utf-8", "replace").lower()

    # These comparators return 0 on a match and 1 otherwise, so "keep iff
    # OP(0, result)": = keeps matches, != keeps the rest (DependentColumnFilter
    # also accepts the other operators, with the same arithmetic).
    if op == "=":
        return matches
    if op == "!=":
        return lambda data: not matches(data)
    keep = _OPS[op]
    return lambda data: keep(0, 0 if matches(data) else 1)


# ------------------------------------------------------------ simple filters


class KeyOnlyFilter(RowFilter):
    name = "KeyOnlyFilter"

    def __init__(self, len_as_val: bool = False) -> None:
        self.len_as_val = len_as_val
        super().__init__()

    def _transforms(self) -> bool:
        return True

    def _transform(self, cell: Cell) -> Cell:
        value = _INT32.pack(len(cell[3])) if self.len_as_val else b""
        return Cell(cell[0], cell[1], cell[2], value)


class FirstKeyOnlyFilter(RowFilter):
    name = "FirstKeyOnlyFilter"

    def _reset_row(self) -> None:
        self._found = False

    def _filter_cell(self, cell: Cell) -> int:
        if self._found:
            return NEXT_ROW
        self._found = True
        return INCLUDE


class PrefixFilter(RowFilter):
    name = "PrefixFilter"
    _can_finish = True

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        super().__init__()

    def _reset_scan(self) -> None:
        self._passed_prefix = False
        self._reset_row()

    def _reset_row(self) -> None:
        self._filter_out = True

    def _all_remaining(self) -> bool:
        return self._passed_prefix

    def _filter_row_key(self, row: bytes) -> bool:
        if self._passed_prefix:
            return True
        prefix = self.prefix
        if len(row) < len(prefix):
            return True
        head = row[: len(prefix)]
        if (head < prefix) if self._reversed else (head > prefix):
            self._passed_prefix = True  # rows are sorted: nothing later can match
        self._filter_out = head != prefix
        return self._filter_out

    def _filter_cell(self, cell: Cell) -> int:
        return NEXT_ROW if self._filter_out else INCLUDE

    def _filter_row(self) -> bool:
        return self._filter_out


class ColumnPrefixFilter(RowFilter):
    name = "ColumnPrefixFilter"

    def __init__(self, prefix: bytes) -> None:
        self.prefix = prefix
        super().__init__()

    def _filter_cell(self, cell: Cell) -> int:
        qualifier = cell[1]
        prefix = self.prefix
        if len(qualifier) < len(prefix):
            return SEEK_NEXT_USING_HINT if qualifier <= prefix[: len(qualifier)] else NEXT_ROW
        head = qualifier[: len(prefix)]
        if head < prefix:
            return SEEK_NEXT_USING_HINT
        return NEXT_ROW if head > prefix else INCLUDE

    def _hint(self, cell: Cell) -> bytes | None:
        return self.prefix


class MultipleColumnPrefixFilter(RowFilter):
    """Faithful to HBase including its quirk with overlapping prefixes.

    HBase only tests the largest prefix <= the qualifier, so with prefixes
    'a' and 'ab' the qualifier 'ac' is not returned.
    """

    name = "MultipleColumnPrefixFilter"

    def __init__(self, prefixes: list[bytes]) -> None:
        self.prefixes = sorted(prefixes)
        super().__init__()

    def _reset_scan(self) -> None:
        self._next_prefix: bytes | None = None

    def _filter_cell(self, cell: Cell) -> int:
        prefixes = self.prefixes
        if not prefixes:
            return INCLUDE
        qualifier = cell[1]
        below = bisect_right(prefixes, qualifier)  # prefixes <= qualifier
        if below:
            if qualifier.startswith(prefixes[below - 1]):
                return INCLUDE
            if below == len(prefixes):
                return NEXT_ROW
            self._next_prefix = prefixes[below]
        else:
            self._next_prefix = prefixes[0]
        return SEEK_NEXT_USING_HINT

    def _hint(self, cell: Cell) -> bytes | None:
        return self._next_prefix


class ColumnCountGetFilter(RowFilter):
    """HBase's own Javadoc calls this unsuitable for scans, and so it is here.

    Once a row has more than ``limit`` + 1 columns, filterAllRemaining()
    turns true mid-row and the scan ends after that row.
    """

    name = "ColumnCountGetFilter"
    _can_finish = True
    _finishes_mid_row = True

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__()

    def _reset_row(self) -> None:
        self._count = 0

    def _all_remaining(self) -> bool:
        return self._count > self.limit

    def _filter_cell(self, cell: Cell) -> int:
        self._count += 1
        return NEXT_COL if self._count > self.limit else INCLUDE_AND_NEXT_COL


class PageFilter(RowFilter):
    name = "PageFilter"
    _can_finish = True

    def __init__(self, page_size: int) -> None:
        self.page_size = page_size
        super().__init__()

    def _reset_scan(self) -> None:
        self._rows_accepted = 0

    def _all_remaining(self) -> bool:
        return self._rows_accepted >= self.page_size

    def _filter_row(self) -> bool:
        self._rows_accepted += 1
        return self._rows_accepted > self.page_size

    def has_filter_row(self) -> bool:
        return True


class ColumnPaginationFilter(RowFilter):
    name = "ColumnPaginationFilter"

    def __init__(self, limit: int, offset: int) -> None:
        self.limit = limit
        self.offset = offset
        super().__init__()

    def _reset_row(self) -> None:
        self._count = 0

    def _filter_cell(self, cell: Cell) -> int:
        if self._count >= self.offset + self.limit:
            return NEXT_ROW
        code = NEXT_COL if self._count < self.offset else INCLUDE_AND_NEXT_COL
        self._count += 1
        return code


class InclusiveStopFilter(RowFilter):
    name = "InclusiveStopFilter"
    _can_finish = True

    def __init__(self, stop_row: bytes) -> None:
        self.stop_row = stop_row
        super().__init__()

    def _reset_scan(self) -> None:
        self._done = False

    def _all_remaining(self) -> bool:
        return self._done

    def _filter_row_key(self, row: bytes) -> bool:
        if self._done:
            return True
        self._done = row < self.stop_row if self._reversed else row > self.stop_row
        return self._done

    def _filter_cell(self, cell: Cell) -> int:
        return NEXT_ROW if self._done else INCLUDE


class TimestampsFilter(RowFilter):
    name = "TimestampsFilter"

    def __init__(self, timestamps: list[int]) -> None:
        self.timestamps = sorted(set(timestamps))
        self._wanted = frozenset(timestamps)
        self._min = self.timestamps[0] if timestamps else _LONG_MAX
        super().__init__()

    def _filter_cell(self, cell: Cell) -> int:
        timestamp = cell[2]
        if timestamp in self._wanted:
            return INCLUDE
        if timestamp < self._min:
            return NEXT_COL  # older versions of this column are older still
        return SKIP


class ColumnRangeFilter(RowFilter):
    name = "ColumnRangeFilter"

    def __init__(
        self,
        min_column: bytes | None,
        min_inclusive: bool,
        max_column: bytes | None,
        max_inclusive: bool,
    ) -> None:
        self.min_column = min_column
        self.min_inclusive = min_inclusive
        self.max_column = max_column
        self.max_inclusive = max_inclusive
        super().__init__()

    def _filter_cell(self, cell: Cell) -> int:
        qualifier = cell[1]
        low = self.min_column
        if low is not None:
            if qualifier < low:
                return SEEK_NEXT_USING_HINT
            if qualifier == low and not self.min_inclusive:
                return SKIP
        high = self.max_column
        if high is None or qualifier < high or (self.max_inclusive and qualifier == high):
            return INCLUDE
        return NEXT_ROW

    def _hint(self, cell: Cell) -> bytes | None:
        return self.min_column or b""


# ------------------------------------------------------------ compare filters


class CompareFilter(RowFilter):
    """Shared shape of RowFilter/FamilyFilter/QualifierFilter/ValueFilter."""

    def __init__(self, comparator: Comparator) -> None:
        self.comparator = comparator
        self._passes = comparator.test
        super().__init__()


class RowKeyFilter(CompareFilter):
    """HBase's ``RowFilter`` (renamed: ``RowFilter`` is the base class here)."""

    name = "RowFilter"

    def _reset_row(self) -> None:
        self._filter_out = False

    def _filter_row_key(self, row: bytes) -> bool:
        if not self._passes(row):
            self._filter_out = True
        return self._filter_out

    def _filter_cell(self, cell: Cell) -> int:
        return NEXT_ROW if self._filter_out else INCLUDE

    def _filter_row(self) -> bool:
        return self._filter_out


class FamilyFilter(CompareFilter):
    name = "FamilyFilter"

    def _filter_cell(self, cell: Cell) -> int:
        if cell[0] and not self._passes(cell[0]):
            return NEXT_ROW  # i.e. the rest of this family
        return INCLUDE


class QualifierFilter(CompareFilter):
    name = "QualifierFilter"

    def _filter_cell(self, cell: Cell) -> int:
        return INCLUDE if self._passes(cell[1]) else SKIP


class ValueFilter(CompareFilter):
    name = "ValueFilter"

    def _filter_cell(self, cell: Cell) -> int:
        return INCLUDE if self._passes(cell[3]) else SKIP


class SingleColumnValueFilter(RowFilter):
    """Whole row passes iff the column's (latest) value matches; rows without it pass by default."""

    name = "SingleColumnValueFilter"

    def __init__(
        self,
        family: bytes,
        qualifier: bytes,
        comparator: Comparator,
        filter_if_missing: bool = False,
        latest_version_only: bool = True,
    ) -> None:
        self.family = family
        self.qualifier = qualifier
        self.comparator = comparator
        self.filter_if_missing = filter_if_missing
        self.latest_version_only = latest_version_only
        self._passes = comparator.test
        super().__init__()

    def is_family_essential(self, family: bytes) -> bool:
        return not self.filter_if_missing or family == self.family

    def _reset_row(self) -> None:
        self._found_column = False
        self._matched_column = False

    def _filter_cell(self, cell: Cell) -> int:
        if self._matched_column:
            return INCLUDE
        if self.latest_version_only and self._found_column:
            return NEXT_ROW
        if cell[1] != self.qualifier or cell[0] != self.family:
            return INCLUDE
        self._found_column = True
        if not self._passes(cell[3]):
            return NEXT_ROW if self.latest_version_only else INCLUDE
        self._matched_column = True
        return INCLUDE

    def _filter_row(self) -> bool:
        if self._found_column:
            return not self._matched_column
        return self.filter_if_missing

    def has_filter_row(self) -> bool:
        return True


class SingleColumnValueExcludeFilter(SingleColumnValueFilter):
    """As SingleColumnValueFilter, but the tested column is removed from the result."""

    name = "SingleColumnValueExcludeFilter"

    def _filter_row_cells(self, cells: list[Cell]) -> list[Cell]:
        family, qualifier = self.family, self.qualifier
        return [c for c in cells if c[1] != qualifier or c[0] != family]


class DependentColumnFilter(RowFilter):
    """Keeps only cells whose timestamp occurs in the reference column (optionally value-tested)."""

    name = "DependentColumnFilter"

    def __init__(
        self,
        family: bytes,
        qualifier: bytes,
        drop_dependent_column: bool = False,
        comparator: Comparator | None = None,
    ) -> None:
        self.family = family
        self.qualifier = qualifier
        self.drop_dependent_column = drop_dependent_column
        self.comparator = comparator
        self._passes = comparator.test if comparator is not None else None
        self._stamps: set[int] = set()
        super().__init__()

    def _reset_row(self) -> None:
        self._stamps.clear()

    def _filter_cell(self, cell: Cell) -> int:
        if cell[1] != self.qualifier or cell[0] != self.family:
            return INCLUDE  # decided in _filter_row_cells
        if self._passes is not None and not self._passes(cell[3]):
            return SKIP
        self._stamps.add(cell[2])
        return SKIP if self.drop_dependent_column else INCLUDE

    def _filter_row_cells(self, cells: list[Cell]) -> list[Cell]:
        stamps = self._stamps
        return [c for c in cells if c[2] in stamps]

    def has_filter_row(self) -> bool:
        return True


class ColumnValueFilter(RowFilter):
    """HBase 2.x: returns only the matching cells of one column (not the whole row)."""

    name = "ColumnValueFilter"

    def __init__(self, family: bytes, qualifier: bytes, comparator: Comparator) -> None:
        self.family = family
        self.qualifier = qualifier
        self.comparator = comparator
        self._passes = comparator.test
        super().__init__()

    def is_family_essential(self, family: bytes) -> bool:
        return family == self.family

    def _reset_row(self) -> None:
        self._column_found = False

    def _filter_cell(self, cell: Cell) -> int:
        if cell[1] != self.qualifier or cell[0] != self.family:
            return NEXT_ROW if self._column_found else NEXT_COL
        self._column_found = True
        return INCLUDE if self._passes(cell[3]) else SKIP


# ---------------------------------------------------------- wrappers, lists


class SkipFilter(RowFilter):
    """``SKIP f``: drop the whole row if ``f`` excludes any cell.

    Like HBase it forwards neither filterRowKey nor filterAllRemaining, so a
    wrapped row-key filter (PrefixFilter, RowFilter) never sees the row key.
    """

    name = "SkipFilter"

    def __init__(self, filter: RowFilter) -> None:
        self.filter = filter
        super().__init__()

    def is_family_essential(self, family: bytes) -> bool:
        return self.filter.is_family_essential(family)

    def _reset_scan(self) -> None:
        self.filter._reset_scan()
        self._filter_out = False

    def _reset_row(self) -> None:
        self.filter._reset_row()
        self._filter_out = False

    def _filter_row_key(self, row: bytes) -> bool:
        return False

    def _filter_cell(self, cell: Cell) -> int:
        code = self.filter._filter_cell(cell)
        if code != INCLUDE:
            self._filter_out = True
        return code

    def _transforms(self) -> bool:
        return self.filter._transforms()

    def _transform(self, cell: Cell) -> Cell:
        return self.filter._transform(cell)

    def _filter_row(self) -> bool:
        return self._filter_out

    def has_filter_row(self) -> bool:
        return True


class WhileMatchFilter(RowFilter):
    """``WHILE f``: end the scan at the first row key, cell or row that ``f`` rejects."""

    name = "WhileMatchFilter"
    _can_finish = True
    _finishes_mid_row = True

    def __init__(self, filter: RowFilter) -> None:
        self.filter = filter
        super().__init__()

    def is_family_essential(self, family: bytes) -> bool:
        return self.filter.is_family_essential(family)

    def _reset_scan(self) -> None:
        self.filter._reset_scan()
        self._done = False

    def _reset_row(self) -> None:
        self.filter._reset_row()

    def _all_remaining(self) -> bool:
        return self._done or self.filter._all_remaining()

    def _filter_row_key(self, row: bytes) -> bool:
        if self._all_remaining():
            return True
        rejected = self.filter._filter_row_key(row)
        self._done = self._done or rejected
        return rejected

    def _filter_cell(self, cell: Cell) -> int:
        code = self.filter._filter_cell(cell)
        if code != INCLUDE:
            self._done = True
        return code

    def _transforms(self) -> bool:
        return self.filter._transforms()

    def _transform(self, cell: Cell) -> Cell:
        return self.filter._transform(cell)

    def _filter_row(self) -> bool:
        rejected = self.filter._filter_row()
        self._done = self._done or rejected
        return rejected

    def has_filter_row(self) -> bool:
        return True


class FilterList(RowFilter):
    """Common part of the AND / OR lists (HBase's FilterListBase)."""

    operator = ""

    def __init__(self, filters: list[RowFilter]) -> None:
        self.filters = filters
        self._finishers = [f for f in filters if f._can_finish]
        self._can_finish = bool(self._finishers)
        self._finishes_mid_row = any(f._finishes_mid_row for f in filters)
        self._transformers = [i for i, f in enumerate(filters) if f._transforms()]
        super().__init__()

    def has_filter_row(self) -> bool:
        return any(f.has_filter_row() for f in self.filters)

    def is_family_essential(self, family: bytes) -> bool:
        return any(f.is_family_essential(family) for f in self.filters)

    def set_reversed(self, reversed: bool) -> None:
        for f in self.filters:
            f.set_reversed(reversed)
        self._reversed = reversed

    def _transforms(self) -> bool:
        return bool(self._transformers)

    def _filter_row_cells(self, cells: list[Cell]) -> list[Cell]:
        for f in self.filters:
            cells = f._filter_row_cells(cells)
        return cells


class FilterListWithAND(FilterList):
    name = "FilterList"
    operator = "MUST_PASS_ALL"

    def _reset_scan(self) -> None:
        for f in self.filters:
            f._reset_scan()
        self._hint_filter: RowFilter | None = None

    def _reset_row(self) -> None:
        for f in self.filters:
            f._reset_row()
        self._hint_filter = None

    def _all_remaining(self) -> bool:
        return any(f._all_remaining() for f in self._finishers)

    def _filter_row_key(self, row: bytes) -> bool:
        # Every sub-filter sees the row key: some (PrefixFilter) keep row state.
        rejected = False
        for f in self.filters:
            if (f._can_finish and f._all_remaining()) or f._filter_row_key(row):
                rejected = True
        return rejected

    def _filter_cell(self, cell: Cell) -> int:
        code = INCLUDE
        self._hint_filter = None
        for f in self.filters:
            if f._can_finish and f._all_remaining():
                return NEXT_ROW
            local = f._filter_cell(cell)
            if local == SEEK_NEXT_USING_HINT:
                self._hint_filter = f
            code = _AND_MERGE[code][local]
            if code >= SKIP:
                # HBASE-20565: later sub-filters must not see cells that are not included.
                return code
        return code

    def _hint(self, cell: Cell) -> bytes | None:
        f = self._hint_filter
        if f is None or f._all_remaining():
            return None
        return f._hint(cell)

    def _transform(self, cell: Cell) -> Cell:
        filters = self.filters
        for i in self._transformers:
            cell = filters[i]._transform(cell)
        return cell

    def _filter_row(self) -> bool:
        return any(f._filter_row() for f in self.filters)  # stops at the first True


class FilterListWithOR(FilterList):
    name = "FilterList"
    operator = "MUST_PASS_ONE"

    def _reset_scan(self) -> None:
        for f in self.filters:
            f._reset_scan()
        self._clear_previous()

    def _reset_row(self) -> None:
        for f in self.filters:
            f._reset_row()
        self._clear_previous()

    def _clear_previous(self) -> None:
        size = len(self.filters)
        self._prev_codes: list[int | None] = [None] * size
        self._prev_cells: list[Cell | None] = [None] * size
        self._included = [False] * size

    def _all_remaining(self) -> bool:
        if len(self._finishers) < len(self.filters):
            return False
        return all(f._all_remaining() for f in self._finishers)

    def _filter_row_key(self, row: bytes) -> bool:
        rejected = True
        for f in self.filters:
            if not (f._can_finish and f._all_remaining()) and not f._filter_row_key(row):
                rejected = False
        return rejected

    def _filter_cell(self, cell: Cell) -> int:
        code = None
        prev_codes = self._prev_codes
        prev_cells = self._prev_cells
        included = self._included
        for i, f in enumerate(self.filters):
            included[i] = False
            if f._can_finish and f._all_remaining():
                continue
            # HBASE-17678: a sub-filter that asked to skip past this cell is not
            # shown it again (the list as a whole may only have skipped one cell).
            local = None
            prev = prev_cells[i]
            if prev is not None:
                prev_code = prev_codes[i]
                if prev_code == SEEK_NEXT_USING_HINT:
                    hint = f._hint(prev)
                    if hint is not None and cell[0] == prev[0] and cell[1] < hint:
                        local = SEEK_NEXT_USING_HINT
                elif prev_code in (NEXT_COL, INCLUDE_AND_NEXT_COL):
                    if cell[1] == prev[1] and cell[0] == prev[0]:
                        local = NEXT_COL
                elif cell[0] == prev[0]:  # NEXT_ROW / INCLUDE_AND_SEEK_NEXT_ROW
                    local = NEXT_ROW
            if local is None:
                local = f._filter_cell(cell)
            prev_codes[i] = local
            prev_cells[i] = None if local in (INCLUDE, SKIP) else cell
            code = local if code is None else _OR_MERGE[code][local]
            if local < SKIP:
                included[i] = True
        return SKIP if code is None else code

    def _hint(self, cell: Cell) -> bytes | None:
        lowest = None
        for f in self.filters:
            if f._all_remaining():
                continue
            hint = f._hint(cell)
            if hint is None:
                return None
            if lowest is None or hint < lowest:
                lowest = hint
        return lowest

    def _transform(self, cell: Cell) -> Cell:
        filters = self.filters
        included = self._included
        for i in self._transformers:
            if included[i]:
                cell = filters[i]._transform(cell)
        return cell

    def _filter_row(self) -> bool:
        return all(f._filter_row() for f in self.filters)  # stops at the first False


# -------------------------------------------------------------------- parser

_WHITESPACE = " \t\r\n"
_BARE_END = " \t\r\n,)"
_NAME_CHARS = re.compile(r"[A-Za-z0-9_]*")
_INTEGER = re.compile(r"-?[0-9]+")


class _Arg(NamedTuple):
    pos: int
    text: str
    quoted: bool


def parse_filter(text: bytes | str) -> RowFilter:
    """Parse a Thrift filter string; raises FilterSyntaxError where HBase would reject it."""
    if isinstance(text, bytes):
        # surrogateescape keeps arbitrary bytes inside quoted arguments intact,
        # while positions of UTF-8 text are character offsets.
        text = text.decode("utf-8", "surrogateescape")
    return _Parser(text).parse()


class _Parser:
    """Small recursive-descent parser over the filter string."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def parse(self) -> RowFilter:
        self._skip_ws()
        if self.pos == len(self.text):
            raise FilterSyntaxError(self.pos, "empty filter string")
        result = self._or_expr()
        self._skip_ws()
        if self.pos < len(self.text):
            if self.text[self.pos] == ")":
                raise FilterSyntaxError(self.pos, "unbalanced parenthesis: unexpected ')'")
            raise FilterSyntaxError(self.pos, f"expected AND or OR, found {self._rest_excerpt()!r}")
        return result

    # -- expressions

    def _or_expr(self) -> RowFilter:
        items = [self._and_expr()]
        while self._keyword("OR"):
            items.append(self._and_expr())
        return items[0] if len(items) == 1 else FilterListWithOR(items)

    def _and_expr(self) -> RowFilter:
        items = [self._unary()]
        while self._keyword("AND"):
            items.append(self._unary())
        return items[0] if len(items) == 1 else FilterListWithAND(items)

    def _unary(self) -> RowFilter:
        self._skip_ws()
        start = self.pos
        if self._keyword("SKIP"):
            return SkipFilter(self._unary())
        if self._keyword("WHILE"):
            return WhileMatchFilter(self._unary())
        if start == len(self.text):
            raise FilterSyntaxError(start, "expected a filter, found end of string")
        if self.text[start] == "(":
            self.pos += 1
            inner = self._or_expr()
            self._skip_ws()
            if self.pos == len(self.text):
                raise FilterSyntaxError(start, "unbalanced parenthesis: '(' is never closed")
            if self.text[self.pos] != ")":
                raise FilterSyntaxError(
                    self.pos, f"expected AND, OR or ')', found {self._rest_excerpt()!r}"
                )
            self.pos += 1
            return inner
        return self._simple_filter()

    def _keyword(self, word: str) -> bool:
        """Consume ``word`` if it stands alone here (followed by whitespace, '(' or the end)."""
        self._skip_ws()
        text, start = self.text, self.pos
        end = start + len(word)
        if text.startswith(word, start) and (end == len(text) or text[end] in "( \t\r\n"):
            self.pos = end
            return True
        return False

    def _simple_filter(self) -> RowFilter:
        text, start = self.text, self.pos
        name = _NAME_CHARS.match(text, start).group()  # type: ignore[union-attr]
        if not name:
            raise FilterSyntaxError(start, f"expected a filter name, found {text[start]!r}")
        if name in ("AND", "OR"):
            raise FilterSyntaxError(start, f"{name} needs a filter on its left")
        build = _BUILDERS.get(name)
        if build is None:
            raise FilterSyntaxError(start, f"unknown filter {name!r}")
        self.pos = start + len(name)
        self._skip_ws()
        if self.pos == len(text) or text[self.pos] != "(":
            raise FilterSyntaxError(self.pos, f"expected '(' after {name}")
        args = self._arguments(name)
        return build(_Args(name, start, args))

    # -- arguments

    def _arguments(self, name: str) -> list[_Arg]:
        text = self.text
        open_pos = self.pos
        self.pos += 1
        args: list[_Arg] = []
        self._skip_ws()
        if self.pos < len(text) and text[self.pos] == ")":
            self.pos += 1
            return args
        while True:
            self._skip_ws()
            if self.pos == len(text):
                break
            args.append(self._argument())
            self._skip_ws()
            if self.pos == len(text):
                break
            char = text[self.pos]
            self.pos += 1
            if char == ")":
                return args
            if char != ",":
                raise FilterSyntaxError(
                    self.pos - 1, f"expected ',' or ')' in the arguments of {name}, found {char!r}"
                )
        raise FilterSyntaxError(
            open_pos, f"unbalanced parenthesis: argument list of {name} is never closed"
        )

    def _argument(self) -> _Arg:
        text, start = self.text, self.pos
        if text[start] == "'":
            parts = []
            scan = start + 1
            while True:
                quote = text.find("'", scan)
                if quote < 0:
                    raise FilterSyntaxError(start, "unterminated quoted string")
                parts.append(text[scan:quote])
                if text.startswith("''", quote):
                    parts.append("'")
                    scan = quote + 2
                    continue
                self.pos = quote + 1
                return _Arg(start, "".join(parts), True)
        end = start
        while end < len(text) and text[end] not in _BARE_END:
            end += 1
        if end == start:
            raise FilterSyntaxError(start, f"expected an argument, found {text[start]!r}")
        self.pos = end
        return _Arg(start, text[start:end], False)

    def _skip_ws(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _WHITESPACE:
            pos += 1
        self.pos = pos

    def _rest_excerpt(self) -> str:
        return self.text[self.pos : self.pos + 20]


class _Args:
    """The arguments of one filter call, with typed accessors that raise positioned errors."""

    def __init__(self, name: str, pos: int, args: list[_Arg]) -> None:
        self.name = name
        self.pos = pos
        self.args = args

    def __len__(self) -> int:
        return len(self.args)

    def expect(self, *counts: int) -> None:
        if len(self.args) not in counts:
            wanted = " or ".join(str(c) for c in counts)
            noun = "argument" if counts == (1,) else "arguments"
            raise FilterSyntaxError(
                self.pos, f"{self.name} takes {wanted} {noun}, got {len(self.args)}"
            )

    def _error(self, arg: _Arg, problem: str) -> FilterSyntaxError:
        index = self.args.index(arg) + 1
        return FilterSyntaxError(arg.pos, f"argument {index} of {self.name}: {problem}")

    def bytes_(self, index: int) -> bytes:
        arg = self.args[index]
        if not arg.quoted:
            raise self._error(arg, f"expected a quoted string, found {arg.text!r}")
        return arg.text.encode("utf-8", "surrogateescape")

    def boolean(self, index: int) -> bool:
        arg = self.args[index]
        word = "" if arg.quoted else arg.text.lower()
        if word not in ("true", "false"):
            raise self._error(arg, f"expected true or false, found {arg.text!r}")
        return word == "true"

    def integer(self, index: int, maximum: int) -> int:
        arg = self.args[index]
        if arg.quoted or not _INTEGER.fullmatch(arg.text):
            raise self._error(arg, f"expected an integer, found {arg.text!r}")
        value = int(arg.text)
        if value > maximum or value < -maximum:
            raise self._error(arg, f"integer {arg.text} out of range")
        if value < 0:
            raise self._error(arg, f"must not be negative, got {value}")
        return value

    def compare_op(self, index: int) -> str:
        arg = self.args[index]
        if arg.quoted or arg.text not in _OPS:
            raise self._error(
                arg, f"expected a compare operator (<, <=, =, !=, >=, >), found {arg.text!r}"
            )
        return arg.text

    def comparator(self, index: int, op: str, *, equality_only_for_text: bool = True) -> Comparator:
        arg = self.args[index]
        raw = self.bytes_(index)
        kind, colon, value = raw.partition(b":")
        kind_text = kind.decode("utf-8", "replace")
        if not colon:
            raise self._error(arg, f"expected a comparator type:value, found {arg.text!r}")
        if kind_text not in _COMPARATOR_TYPES:
            raise self._error(
                arg,
                f"unknown comparator type {kind_text!r} "
                "(expected binary, binaryprefix, regexstring or substring)",
            )
        text_kind = kind_text in ("regexstring", "substring")
        if text_kind and equality_only_for_text and op not in ("=", "!="):
            raise self._error(arg, f"{kind_text} comparators can only be used with = and !=")
        pattern = None
        if kind_text == "regexstring":
            source = value.decode("utf-8", "replace")
            try:
                pattern = re.compile(source, re.DOTALL)
            except re.error as exc:
                raise self._error(arg, f"invalid regular expression {source!r}: {exc}") from None
        return Comparator(kind_text, value, op, _make_test(kind_text, value, op, pattern))


# ------------------------------------------------------------------ builders
# One per filter: the argument forms of HBase's createFilterFromArguments.


def _key_only(a: _Args) -> RowFilter:
    a.expect(0, 1)
    return KeyOnlyFilter(a.boolean(0) if len(a) else False)


def _first_key_only(a: _Args) -> RowFilter:
    a.expect(0)
    return FirstKeyOnlyFilter()


def _prefix(a: _Args) -> RowFilter:
    a.expect(1)
    return PrefixFilter(a.bytes_(0))


def _column_prefix(a: _Args) -> RowFilter:
    a.expect(1)
    return ColumnPrefixFilter(a.bytes_(0))


def _multiple_column_prefix(a: _Args) -> RowFilter:
    prefixes: list[bytes] = []
    for i in range(len(a)):
        prefix = a.bytes_(i)
        if prefix in prefixes:
            raise a._error(a.args[i], "prefixes must be distinct")
        prefixes.append(prefix)
    return MultipleColumnPrefixFilter(prefixes)


def _column_count_get(a: _Args) -> RowFilter:
    a.expect(1)
    return ColumnCountGetFilter(a.integer(0, _INT_MAX))


def _page(a: _Args) -> RowFilter:
    a.expect(1)
    return PageFilter(a.integer(0, _LONG_MAX))


def _column_pagination(a: _Args) -> RowFilter:
    a.expect(2)
    return ColumnPaginationFilter(a.integer(0, _INT_MAX), a.integer(1, _INT_MAX))


def _inclusive_stop(a: _Args) -> RowFilter:
    a.expect(1)
    return InclusiveStopFilter(a.bytes_(0))


def _timestamps(a: _Args) -> RowFilter:
    return TimestampsFilter([a.integer(i, _LONG_MAX) for i in range(len(a))])


def _compare_filter(cls: type[CompareFilter]) -> Callable[[_Args], RowFilter]:
    def build(a: _Args) -> RowFilter:
        a.expect(2)
        op = a.compare_op(0)
        return cls(a.comparator(1, op))

    return build


def _column_range(a: _Args) -> RowFilter:
    a.expect(4)
    # An empty bound means "unbounded" (HBase turns '' into null).
    return ColumnRangeFilter(a.bytes_(0) or None, a.boolean(1), a.bytes_(2) or None, a.boolean(3))


def _single_column_value(cls: type[SingleColumnValueFilter]) -> Callable[[_Args], RowFilter]:
    def build(a: _Args) -> RowFilter:
        a.expect(4, 6)
        family, qualifier, op = a.bytes_(0), a.bytes_(1), a.compare_op(2)
        comparator = a.comparator(3, op)
        if len(a) == 6:
            return cls(family, qualifier, comparator, a.boolean(4), a.boolean(5))
        return cls(family, qualifier, comparator)

    return build


def _dependent_column(a: _Args) -> RowFilter:
    a.expect(2, 3, 5)
    family, qualifier = a.bytes_(0), a.bytes_(1)
    drop = a.boolean(2) if len(a) >= 3 else False
    comparator = None
    if len(a) == 5:
        # HBase does not restrict regexstring/substring to =/!= here.
        op = a.compare_op(3)
        comparator = a.comparator(4, op, equality_only_for_text=False)
    return DependentColumnFilter(family, qualifier, drop, comparator)


def _column_value(a: _Args) -> RowFilter:
    a.expect(4)
    family, qualifier, op = a.bytes_(0), a.bytes_(1), a.compare_op(2)
    return ColumnValueFilter(family, qualifier, a.comparator(3, op))


_BUILDERS: dict[str, Callable[[_Args], RowFilter]] = {
    "KeyOnlyFilter": _key_only,
    "FirstKeyOnlyFilter": _first_key_only,
    "PrefixFilter": _prefix,
    "ColumnPrefixFilter": _column_prefix,
    "MultipleColumnPrefixFilter": _multiple_column_prefix,
    "ColumnCountGetFilter": _column_count_get,
    "PageFilter": _page,
    "ColumnPaginationFilter": _column_pagination,
    "InclusiveStopFilter": _inclusive_stop,
    "TimestampsFilter": _timestamps,
    "RowFilter": _compare_filter(RowKeyFilter),
    "FamilyFilter": _compare_filter(FamilyFilter),
    "QualifierFilter": _compare_filter(QualifierFilter),
    "ValueFilter": _compare_filter(ValueFilter),
    "ColumnRangeFilter": _column_range,
    "SingleColumnValueFilter": _single_column_value(SingleColumnValueFilter),
    "SingleColumnValueExcludeFilter": _single_column_value(SingleColumnValueExcludeFilter),
    "DependentColumnFilter": _dependent_column,
    "ColumnValueFilter": _column_value,
}
