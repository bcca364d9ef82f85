"""Which audience queries the engine can answer: ``parse_query`` plus the bounds of the storage.

A query that passes is safe to turn into row keys and scans; who may ask it is the service's
business (``profile_store.service.tenants``).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from profile_store.audiences.query import Leaf, Node, QueryError, QueryLimits, leaves, parse_query

MAX_MIN_COUNT = (1 << 63) - 1
"""Largest ``min_count`` answered: event counts are 64-bit integers."""


def admissible_query(tree: Any, limits: QueryLimits | None = None) -> Node:
    """``parse_query`` plus the bounds the engine's storage imposes, as ``QueryError``s.

    Rejected here, with the path of the value: strings that are not valid Unicode (lone
    surrogates cannot become row keys), ``date_to`` on the last representable day (a scan stops
    at the next day) and ``min_count`` beyond 64-bit event counts.
    """
    query = parse_query(tree, limits)
    for leaf in leaves(query):
        _check_leaf(leaf)
    return query


def _check_leaf(leaf: Leaf) -> None:
    texts = [(f"{leaf.path}.app_id", leaf.app_id), (f"{leaf.path}.event_type", leaf.event_type)]
    for name, value in leaf.attributes.items():
        texts.append((f"{leaf.path}.attributes", name))
        texts.append((f"{leaf.path}.attributes.{name}", value))
    for path, text in texts:
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise QueryError(path, "not valid Unicode (unpaired surrogate)") from None
    if leaf.date_to is not None and leaf.date_to >= date.max:
        raise QueryError(f"{leaf.path}.date_to", f"must be before {date.max.isoformat()}")
    if leaf.min_count is not None and leaf.min_count > MAX_MIN_COUNT:
        raise QueryError(f"{leaf.path}.min_count", f"must be at most {MAX_MIN_COUNT}")
