"""The audience query: a JSON tree of set operations over leaves, parsed and validated.

```json
{"difference": [
  {"intersection": [
    {"app_id": "com.shop", "event_type": "install",
     "date_from": "2026-11-01", "date_to": "2026-11-30"},
    {"app_id": "com.shop", "event_type": "add_to_cart",
     "date_from": "2026-11-01", "date_to": "2026-11-30",
     "min_count": 3, "attributes": {"product_type": "shoes"}}]},
  {"app_id": "com.shop", "event_type": "purchase",
   "date_from": "2026-11-01", "date_to": "2026-11-30"}]}
```

A leaf may instead count back from the latest built day: ``"last_days": 7`` is the 7 days
ending with it, so that a saved audience means the same thing every day (``resolve_dates``).

Every error names the JSON path of the fault (``$.difference[0].intersection[1].min_count``)
and the problem; a query that parses is structurally sound, so evaluation never guesses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from typing import Any

OPERATORS = ("union", "intersection", "difference")
LEAF_FIELDS = {
    "app_id",
    "event_type",
    "date_from",
    "date_to",
    "last_days",
    "min_count",
    "attributes",
}


def days_between(first: date, last: date) -> list[date]:
    """Every day from ``first`` to ``last``, both included (none when ``last`` is earlier)."""
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


class QueryError(ValueError):
    """A query that cannot be answered as written; ``path`` locates the fault."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


@dataclass(frozen=True)
class QueryLimits:
    max_days: int = 366
    max_depth: int = 8
    max_leaves: int = 32


@dataclass(frozen=True)
class Leaf:
    """One set of users; a relative leaf (``last_days``) has its dates once resolved."""

    path: str
    app_id: str
    event_type: str
    date_from: date | None
    date_to: date | None
    min_count: int | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    last_days: int | None = None

    @property
    def span(self) -> tuple[date, date]:
        """``(date_from, date_to)``; a ValueError while a relative leaf is unresolved."""
        if self.date_from is None or self.date_to is None:
            raise ValueError(f"{self.path}: last_days not resolved against a built day yet")
        return self.date_from, self.date_to

    def days(self) -> list[date]:
        return days_between(*self.span)


@dataclass(frozen=True)
class Operation:
    path: str
    operator: str
    children: tuple[Leaf | Operation, ...]


Node = Leaf | Operation


def leaves(node: Node) -> list[Leaf]:
    if isinstance(node, Leaf):
        return [node]
    return [leaf for child in node.children for leaf in leaves(child)]


def leaf_identity(leaf: Leaf) -> tuple:
    """What a leaf selects, independent of where it stands in a tree."""
    return (
        leaf.app_id,
        leaf.event_type,
        leaf.date_from,
        leaf.date_to,
        leaf.min_count,
        tuple(sorted(leaf.attributes.items())),
    )


def canonical_form(node: Node) -> tuple:
    """The question a tree of resolved dates asks, whatever the order of a union's or an
    intersection's operands and of a difference's subtracted ones: two trees of one form count
    the same users."""
    if isinstance(node, Leaf):
        return ("leaf", leaf_identity(node))
    forms = [canonical_form(child) for child in node.children]
    if node.operator == "difference":
        return ("difference", forms[0], tuple(sorted(forms[1:], key=repr)))
    return (node.operator, tuple(sorted(forms, key=repr)))


def is_relative(node: Node) -> bool:
    """Whether some leaf counts its days back from the latest built day."""
    return any(leaf.last_days is not None for leaf in leaves(node))


def resolve_dates(node: Node, latest_day: date) -> Node:
    """The tree with every ``last_days`` leaf given the dates ending on ``latest_day``."""
    if isinstance(node, Leaf):
        if node.last_days is None:
            return node
        start = latest_day - timedelta(days=node.last_days - 1)
        return replace(node, date_from=start, date_to=latest_day)
    return replace(node, children=tuple(resolve_dates(c, latest_day) for c in node.children))


def query_tree(node: Node) -> dict:
    """The JSON tree of a parsed (resolved) query: dates explicit, as ``parse_query`` reads."""
    if isinstance(node, Operation):
        return {node.operator: [query_tree(child) for child in node.children]}
    tree: dict[str, Any] = {"app_id": node.app_id, "event_type": node.event_type}
    if node.date_from is None or node.date_to is None:
        tree["last_days"] = node.last_days
    else:
        tree["date_from"] = node.date_from.isoformat()
        tree["date_to"] = node.date_to.isoformat()
    if node.min_count is not None:
        tree["min_count"] = node.min_count
    if node.attributes:
        tree["attributes"] = dict(node.attributes)
    return tree


def parse_query(tree: Any, limits: QueryLimits | None = None) -> Node:
    """Parse and validate a query tree (already decoded from JSON)."""
    limits = limits or QueryLimits()
    node = _parse(tree, "$", 1, limits)
    count = len(leaves(node))
    if count > limits.max_leaves:
        raise QueryError("$", f"too many leaves: {count} > {limits.max_leaves}")
    return node


def _parse(tree: Any, path: str, depth: int, limits: QueryLimits) -> Node:
    if depth > limits.max_depth:
        raise QueryError(path, f"tree deeper than {limits.max_depth} levels")
    if not isinstance(tree, dict):
        raise QueryError(path, f"expected an object, got {type(tree).__name__}")
    operators = [key for key in tree if key in OPERATORS]
    if operators:
        if len(tree) != 1:
            raise QueryError(path, "an operator node has exactly one key, the operator")
        operator = operators[0]
        children = tree[operator]
        child_path = f"{path}.{operator}"
        if not isinstance(children, list) or len(children) < 2:
            raise QueryError(child_path, "expected a list of at least 2 sub-queries")
        return Operation(
            path=path,
            operator=operator,
            children=tuple(
                _parse(child, f"{child_path}[{i}]", depth + 1, limits)
                for i, child in enumerate(children)
            ),
        )
    if "app_id" not in tree and "event_type" not in tree:
        unknown = ", ".join(sorted(tree)) or "(empty object)"
        raise QueryError(
            path, f"unknown operator {unknown}: expected one of {', '.join(OPERATORS)} or a leaf"
        )
    return _parse_leaf(tree, path, limits)


MAX_TEXT_LENGTH = 1024
"""Longest app id, event type, attribute name or value a leaf may name (as the event
contract's attribute values): every row key it builds then fits HBase's 32,767 bytes."""


def _text(tree: dict, key: str, path: str) -> str:
    value = tree.get(key)
    if not isinstance(value, str) or not value:
        raise QueryError(f"{path}.{key}", "required, a non-empty string")
    _check_length(value, f"{path}.{key}")
    return value


def _check_length(value: str, path: str) -> None:
    if len(value) > MAX_TEXT_LENGTH:
        raise QueryError(path, f"longer than {MAX_TEXT_LENGTH} characters ({len(value):,})")


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _day(tree: dict, key: str, path: str) -> date:
    """A calendar day written YYYY-MM-DD; Python's other ISO forms (``20261101``,
    ``2026-W44-7``) are not accepted, as the published schema's ``format: date`` says."""
    text = _text(tree, key, path)
    try:
        if not _ISO_DAY.fullmatch(text):
            raise ValueError(text)
        return date.fromisoformat(text)
    except ValueError:
        raise QueryError(f"{path}.{key}", f"not a date (YYYY-MM-DD): {text!r}") from None


def _parse_leaf(tree: dict, path: str, limits: QueryLimits) -> Leaf:
    unknown = sorted(set(tree) - LEAF_FIELDS)
    if unknown:
        raise QueryError(f"{path}.{unknown[0]}", "unknown leaf field")
    if "last_days" in tree:
        date_from = date_to = None
        last_days = _last_days(tree, path, limits)
    else:
        last_days = None
        date_from = _day(tree, "date_from", path)
        date_to = _day(tree, "date_to", path)
        if date_from > date_to:
            raise QueryError(f"{path}.date_from", f"after date_to ({date_from} > {date_to})")
        span = (date_to - date_from).days + 1
        if span > limits.max_days:
            raise QueryError(f"{path}.date_to", f"range of {span} days exceeds {limits.max_days}")
    min_count = tree.get("min_count")
    if min_count is not None and (
        isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1
    ):
        raise QueryError(f"{path}.min_count", "must be a positive integer")
    attributes = tree.get("attributes", {})
    if not isinstance(attributes, dict):
        raise QueryError(
            f"{path}.attributes", "expected an object of name: value (omit it for no filter)"
        )
    for name, value in attributes.items():
        if not name:
            raise QueryError(f'{path}.attributes[""]', "an attribute name must not be empty")
        if not isinstance(value, str) or not value:
            raise QueryError(f"{path}.attributes.{name}", "value must be a non-empty string")
        _check_length(name, f"{path}.attributes")
        _check_length(value, f"{path}.attributes.{name}")
    return Leaf(
        path=path,
        app_id=_text(tree, "app_id", path),
        event_type=_text(tree, "event_type", path),
        date_from=date_from,
        date_to=date_to,
        min_count=min_count,
        attributes=dict(attributes),
        last_days=last_days,
    )


def _last_days(tree: dict, path: str, limits: QueryLimits) -> int:
    both = sorted({"date_from", "date_to"} & set(tree))
    if both:
        raise QueryError(
            f"{path}.{both[0]}", "give either last_days or date_from and date_to, not both"
        )
    value = tree["last_days"]
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise QueryError(f"{path}.last_days", "must be a positive integer (days)")
    if value > limits.max_days:
        raise QueryError(f"{path}.last_days", f"range of {value} days exceeds {limits.max_days}")
    return value
