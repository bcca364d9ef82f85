"""HBase's filter language (Thrift ``filterString``): ``parse_filter`` turns a filter string
into a tree of filter objects (``filters``), following the grammar of HBase's ``ParseFilter``
and the argument forms of each filter's ``createFilterFromArguments``; a string HBase would
refuse is a ``FilterSyntaxError`` naming the position and the problem.

Grammar (precedence as in HBase: SKIP/WHILE bind tighter than AND, AND
tighter than OR)::

    filter   := or_expr
    or_expr  := and_expr ('OR' and_expr)*
    and_expr := unary ('AND' unary)*
    unary    := 'SKIP' unary | 'WHILE' unary | '(' or_expr ')' | Name '(' [arg (',' arg)*] ')'
    arg      := 'quoted, '' escapes a quote' | bare (number, true/false, <, <=, =, !=, >=, >)

Intentional deviations from HBase's parser:

* Arguments must be separated by exactly one comma.  HBase's tokenizer also
  accepts ``F('a' 'b')`` and ``F('a',,'b')``; we reject them with a position.
* ``regexstring:`` patterns are Python's ``re``: Java-only syntax
  (``\\p{Alpha}``, ``\\Q..\\E``, ``(?<name>..)``, ``\\z``) is rejected here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from .filters import (
    COMPARATOR_TYPES,
    COMPARE_OPS,
    INT_MAX,
    LONG_MAX,
    ColumnCountGetFilter,
    ColumnPaginationFilter,
    ColumnPrefixFilter,
    ColumnRangeFilter,
    ColumnValueFilter,
    Comparator,
    CompareFilter,
    DependentColumnFilter,
    FamilyFilter,
    FilterListWithAND,
    FilterListWithOR,
    FirstKeyOnlyFilter,
    InclusiveStopFilter,
    KeyOnlyFilter,
    MultipleColumnPrefixFilter,
    PageFilter,
    PrefixFilter,
    QualifierFilter,
    RowKeyFilter,
    SingleColumnValueExcludeFilter,
    SingleColumnValueFilter,
    SkipFilter,
    TimestampsFilter,
    ValueFilter,
    WhileMatchFilter,
    comparator_test,
)
from .row_filter import RowFilter


class FilterSyntaxError(ValueError):
    """A filter string that HBase would reject; names the 0-based offset and the problem."""

    def __init__(self, position: int, problem: str) -> None:
        super().__init__(f"invalid filter string at position {position}: {problem}")
        self.position = position
        self.problem = problem


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
        matched = _NAME_CHARS.match(text, start)  # always matches (maybe nothing)
        name = matched.group() if matched else ""
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
        if arg.quoted or arg.text not in COMPARE_OPS:
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
        if kind_text not in COMPARATOR_TYPES:
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
        return Comparator(kind_text, value, op, comparator_test(kind_text, value, op, pattern))


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
    return ColumnCountGetFilter(a.integer(0, INT_MAX))


def _page(a: _Args) -> RowFilter:
    a.expect(1)
    return PageFilter(a.integer(0, LONG_MAX))


def _column_pagination(a: _Args) -> RowFilter:
    a.expect(2)
    return ColumnPaginationFilter(a.integer(0, INT_MAX), a.integer(1, INT_MAX))


def _inclusive_stop(a: _Args) -> RowFilter:
    a.expect(1)
    return InclusiveStopFilter(a.bytes_(0))


def _timestamps(a: _Args) -> RowFilter:
    return TimestampsFilter([a.integer(i, LONG_MAX) for i in range(len(a))])


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
