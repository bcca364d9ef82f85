"""What an audience can be built from: apps, event types and their days, kept attributes and
values, read from the rows the builder already needs (no scan of combination rows).

- apps and event types with their days: the built-day markers (``built_days``, one short scan);
- one event type's kept attributes and values on a day: its aggregate row (``m:kept``, users)
  and the scan of that day's marginal range (``app|event|day|~|``), which holds the kept
  markers and one marginal row per kept value with its estimated users. The marginal range
  sorts after the day's combination rows and before its pair rows, so nothing else is read.

User counts are the theta estimates written with each row (``m:users``): daily unique users,
within about 2/sqrt(k) (~3% at the default lg_k 12) at 95% confidence once a set exceeds k.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from profile_store.audiences.built_days import built_days
from profile_store.audiences.rowkey import (
    MARGINAL_MARK,
    SEPARATOR,
    aggregate_rowkey,
    day_prefix,
    decode_component,
)
from profile_store.audiences.sketch_table import KEPT, KEPT_MARKER, USERS

DEFAULT_MAX_VALUES = 100


class NotBuilt(LookupError):
    """The (app, event type) has no built day (or not the day asked for)."""


@dataclass
class EventTypeDays:
    event_type: str
    days: list[date]

    def to_dict(self) -> dict:
        return {
            "event_type": self.event_type,
            "first_day": self.days[0].isoformat(),
            "last_day": self.days[-1].isoformat(),
            "days_built": [day.isoformat() for day in self.days],
        }


@dataclass
class AppCatalog:
    app_id: str
    event_types: list[EventTypeDays] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"app_id": self.app_id, "event_types": [e.to_dict() for e in self.event_types]}


def app_catalog(table, may_query: Callable[[str], bool]) -> tuple[list[AppCatalog], date | None]:
    """The apps ``may_query`` admits, each event type with the built days that have its users,
    and the latest built day; one scan of the built-day markers."""
    catalog, days = catalog_and_days(table, may_query)
    return catalog, max(days, default=None)


def catalog_and_days(
    table, may_query: Callable[[str], bool]
) -> tuple[list[AppCatalog], list[date]]:
    """As ``app_catalog``, with every built day instead of the latest: the days a query can
    be answered over (a built day without an app's events counts it as no users)."""
    days = built_days(table)
    by_app: dict[str, dict[str, list[date]]] = {}
    for day, pairs in days.items():
        for app, event in pairs:
            if may_query(app):
                by_app.setdefault(app, {}).setdefault(event, []).append(day)
    catalog = [
        AppCatalog(app, [EventTypeDays(event, sorted(d)) for event, d in sorted(events.items())])
        for app, events in sorted(by_app.items())
    ]
    return catalog, list(days)


def event_days(table, app_id: str, event_type: str) -> list[date]:
    """The built days on which (app, event type) has users."""
    return [day for day, pairs in built_days(table).items() if (app_id, event_type) in pairs]


@dataclass
class AttributeValues:
    name: str
    values: list[tuple[str, int]]  # (value, estimated users), most users first
    values_total: int

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "values": [{"value": v, "users": u} for v, u in self.values],
            "values_total": self.values_total,
        }


@dataclass
class EventAttributes:
    app_id: str
    event_type: str
    day: date
    users: int
    attributes: list[AttributeValues]

    def to_dict(self) -> dict:
        return {
            "app_id": self.app_id,
            "event_type": self.event_type,
            "day": self.day.isoformat(),
            "users": self.users,
            "attributes": [a.to_dict() for a in self.attributes],
        }


def event_attributes(
    table,
    app_id: str,
    event_type: str,
    day: date | None = None,
    max_values: int = DEFAULT_MAX_VALUES,
) -> EventAttributes:
    """The kept attributes of (app, event type) on ``day`` (default: its latest built day with
    users) with their values, at most ``max_values`` each (the most users first)."""
    if day is None:
        days = event_days(table, app_id, event_type)
        if not days:
            raise NotBuilt(f"{app_id}/{event_type} has no built day with users")
        day = days[-1]
    aggregate = table.row(aggregate_rowkey(app_id, event_type, day), columns=[KEPT, USERS])
    if not aggregate:
        raise NotBuilt(f"{app_id}/{event_type} has no sketches on {day.isoformat()}")
    kept = json.loads(aggregate.get(KEPT, b"[]"))
    prefix = day_prefix(app_id, event_type, day) + (MARGINAL_MARK + SEPARATOR).encode()
    values: dict[str, list[tuple[str, int]]] = {name: [] for name in kept}
    for key, cells in table.scan(row_prefix=prefix, columns=[USERS, KEPT_MARKER], batch_size=1000):
        name, _, value = key[len(prefix) :].decode().partition(SEPARATOR)
        name = decode_component(name)
        if USERS in cells and name in values:
            values[name].append((decode_component(value), int(cells[USERS])))
    attributes = []
    for name in sorted(values):
        ranked = sorted(values[name], key=lambda item: (-item[1], item[0]))
        attributes.append(AttributeValues(name, ranked[:max_values], len(ranked)))
    return EventAttributes(app_id, event_type, day, int(aggregate.get(USERS, b"0")), attributes)
