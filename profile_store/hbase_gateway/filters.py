"""The standard HBase filters with HBase 2.x's semantics: per filter the exact ``filterRowKey``
/ ``filterCell`` / ``transformCell`` / ``filterRowCells`` / ``filterRow`` /
``filterAllRemaining`` / ``reset`` behaviour, including ``FilterListWithAND`` /
``FilterListWithOR`` return-code merging, ``SkipFilter`` and ``WhileMatchFilter``
(``WrapperFilter``). ``filter_language`` builds them from a filter string;
``row_filter`` shows them a row as HBase's region scanner does.

Comparators: ``binary:`` (lexicographic bytes), ``binaryprefix:`` (compares the
first len(value) bytes), ``regexstring:`` and ``substring:`` (only = and !=
for the compare filters, as in HBase; ``substring`` is case-insensitive).

Intentional deviations from HBase (everything else is meant to match):

* ``regexstring:`` uses Python ``re`` instead of ``java.util.regex``.  Kept
  from Java: DOTALL, search (``find()``) rather than full match, cell bytes
  decoded as UTF-8 with replacement characters.  Different: ``\\Z``, ``\\b``,
  ``\\w`` and case folding follow Python's rules (Java-only syntax is refused by
  ``filter_language``).
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
"""

from __future__ import annotations

import operator
import re
import struct
from bisect import bisect_right
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from .row_filter import (
    INCLUDE,
    INCLUDE_AND_NEXT_COL,
    NEXT_COL,
    NEXT_ROW,
    SEEK_NEXT_USING_HINT,
    SKIP,
    Cell,
    RowFilter,
)

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
LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


# --------------------------------------------------------------- comparators

# Keep a cell iff OP(cell_bytes, comparator_value).  HBase computes
# ``comparator.compareTo(cell)`` (comparator value on the left) and filters the
# cell out when CompareFilter.compare() says so; written the other way round
# that is exactly "keep iff cell OP value", e.g. RowFilter(<, 'binary:b') keeps
# row keys below 'b'.  ``_FLIPPED`` lets functools.partial bind the value first.
# Operands: bytes (cell and comparator values) or ints (a substring/regex comparator's 0 or 1).
COMPARE_OPS: dict[str, Callable[[bytes | int, bytes | int], bool]] = {
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
COMPARATOR_TYPES = ("binary", "binaryprefix", "regexstring", "substring")


class Comparator(NamedTuple):
    """A parsed ``type:value`` comparator plus the compare op it is used with."""

    kind: str
    value: bytes
    op: str
    test: Callable[[bytes], bool]  # True when the cell passes


def comparator_test(kind: str, value: bytes, op: str, pattern: re.Pattern[str] | None) -> Callable:
    if kind == "binary":
        return partial(_FLIPPED[op], value)
    if kind == "binaryprefix":
        size = len(value)
        flipped = _FLIPPED[op]
        return lambda data: flipped(value, data[:size])
    if kind == "regexstring":
        if pattern is None:
            raise ValueError("a regexstring comparator needs its compiled pattern")
        search = pattern.search

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
    keep = COMPARE_OPS[op]
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
        self._min = self.timestamps[0] if timestamps else LONG_MAX
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


class WrapperFilter(RowFilter):
    """A filter around one other (HBase's ``SkipFilter`` and ``WhileMatchFilter``): the wrapped
    filter decides the cells, is reset with the wrapper and transforms what it keeps; what the
    wrapper does once that filter excludes a cell is ``_excluded``."""

    def __init__(self, filter: RowFilter) -> None:
        self.filter = filter
        super().__init__()

    def is_family_essential(self, family: bytes) -> bool:
        return self.filter.is_family_essential(family)

    def _reset_scan(self) -> None:
        self.filter._reset_scan()

    def _reset_row(self) -> None:
        self.filter._reset_row()

    def _filter_cell(self, cell: Cell) -> int:
        code = self.filter._filter_cell(cell)
        if code != INCLUDE:
            self._excluded()
        return code

    def _excluded(self) -> None:
        """The wrapped filter excluded a cell."""

    def _transforms(self) -> bool:
        return self.filter._transforms()

    def _transform(self, cell: Cell) -> Cell:
        return self.filter._transform(cell)

    def has_filter_row(self) -> bool:
        return True


class SkipFilter(WrapperFilter):
    """``SKIP f``: drop the whole row if ``f`` excludes any cell.

    Like HBase it forwards neither filterRowKey nor filterAllRemaining, so a
    wrapped row-key filter (PrefixFilter, RowFilter) never sees the row key.
    """

    name = "SkipFilter"

    def _reset_scan(self) -> None:
        super()._reset_scan()
        self._filter_out = False

    def _reset_row(self) -> None:
        super()._reset_row()
        self._filter_out = False

    def _filter_row_key(self, row: bytes) -> bool:
        return False

    def _excluded(self) -> None:
        self._filter_out = True

    def _filter_row(self) -> bool:
        return self._filter_out


class WhileMatchFilter(WrapperFilter):
    """``WHILE f``: end the scan at the first row key, cell or row that ``f`` rejects."""

    name = "WhileMatchFilter"
    _can_finish = True
    _finishes_mid_row = True

    def _reset_scan(self) -> None:
        super()._reset_scan()
        self._done = False

    def _all_remaining(self) -> bool:
        return self._done or self.filter._all_remaining()

    def _filter_row_key(self, row: bytes) -> bool:
        if self._all_remaining():
            return True
        rejected = self.filter._filter_row_key(row)
        self._done = self._done or rejected
        return rejected

    def _excluded(self) -> None:
        self._done = True

    def _filter_row(self) -> bool:
        rejected = self.filter._filter_row()
        self._done = self._done or rejected
        return rejected


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
                # As HBase's list does: later sub-filters must not see cells that are not included.
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
            # As HBase's list does: a sub-filter that asked to skip past this cell is not
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
