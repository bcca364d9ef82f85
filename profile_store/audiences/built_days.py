"""The built-day markers: which days are answerable, and which (app, event type) pairs they hold.

``audience_sketches`` writes a day's marker (``|built|yyyymmdd``) last, with the pairs that have
rows that day. All markers share one key prefix outside every leaf's range, so one short scan
(a row per built day) tells the latest built day (relative date ranges count back from it) and
the catalog of apps and event types, without touching a sketch row.
"""

from __future__ import annotations

import json
from datetime import date

from profile_store.audiences.rowkey import SEPARATOR, built_day_rowkey
from profile_store.audiences.sketch_table import BUILT, BUILT_PAIRS

BUILT_PREFIX = (SEPARATOR + "built" + SEPARATOR).encode()


def built_day_cells(day: date, pairs: list[tuple[str, str]]) -> tuple[bytes, dict[bytes, bytes]]:
    """The marker row of ``day`` (key and cells) listing the day's ``pairs``."""
    cells = {BUILT: str(len(pairs)).encode(), BUILT_PAIRS: json.dumps(sorted(pairs)).encode()}
    return built_day_rowkey(day), cells


def _day(key: bytes) -> date:
    text = key[len(BUILT_PREFIX) :].decode()
    return date(int(text[:4]), int(text[4:6]), int(text[6:8]))


def built_days(table) -> dict[date, list[tuple[str, str]]]:
    """Every built day with its (app, event type) pairs, in day order; one scan.

    A day built before markers carried their pairs maps to an empty list (re-materialize its
    ``audience_sketches`` to list it).
    """
    found = {}
    for key, cells in table.scan(row_prefix=BUILT_PREFIX, columns=[BUILT_PAIRS, BUILT]):
        pairs = json.loads(cells.get(BUILT_PAIRS, b"[]"))
        found[_day(key)] = [(app, event) for app, event in pairs]
    return dict(sorted(found.items()))


def latest_built_day(table) -> date | None:
    """The last day whose sketches are complete, or None before the first build; one scan."""
    days = [_day(key) for key, _ in table.scan(row_prefix=BUILT_PREFIX, columns=[BUILT])]
    return max(days, default=None)
