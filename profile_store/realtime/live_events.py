"""A batch of Kafka messages as the events the live profile job applies, in columns.

The job applies what ingest will accept, as ingest reads it: the contract's fields and types
(``events/schema.py``), the required fields, the id types, the time in Spark's patterns
(``event_days.event_millis``), the attribute bounds (``ValidationRules``), ids in their one
spelling (``id_case``), and not an id on the erasure suppression list. Anything else is left to
the lake sink and ingest, which quarantine it with its reason; the job counts it and moves on.
(Ingest also drops an identical re-delivery of an ``event_id``: the live view counts both until
the day's run, which keeps one.)

Each message is decoded once (``json.loads``, C) and its fields checked; everything after that
(times, days, grouping, rules, counters) runs over the batch's columns.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from profile_store.event_bus.consumer import MessageBatch
from profile_store.events.id_case import alt_id_case, normalize_id
from profile_store.events.schema import ID_TYPES, MAP_FIELDS, STRING_FIELDS
from profile_store.events.validation import ValidationRules
from profile_store.identity.rules import MEMBER_ID
from profile_store.realtime.event_days import event_millis
from profile_store.suppression.salted_digests import Suppression

_FIELDS = frozenset((*STRING_FIELDS, *MAP_FIELDS))
_NOT_BLANK = ("event_id", "app_id", "user_id", "event_type")
_MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class LiveEvents:
    """The valid events of a batch, one entry per event, in batch order."""

    partitions: np.ndarray  # int32
    offsets: np.ndarray  # int64
    origins: list[str]  # user id in its one spelling: the profile id
    event_types: np.ndarray  # object (str)
    app_ids: np.ndarray  # object (str)
    event_ms: np.ndarray  # int64
    days: np.ndarray  # int64, days since 1970-01-01 (UTC)
    attributes: dict[str, np.ndarray]  # attribute the rules test -> object array (None: absent)
    keys: list[tuple[tuple[str, str], ...]]  # (key type, key) of each event's alternate ids

    def __len__(self) -> int:
        return len(self.offsets)


@dataclass
class ParseReport:
    """What a batch held besides the events applied."""

    rejected: Counter = field(default_factory=Counter)  # reason -> messages
    suppressed: int = 0


def _rejection(event: object) -> str | None:
    """The first rule of the contract ``event`` breaks, as ingest names it (None: none)."""
    if not isinstance(event, dict):
        return "not_an_object"
    if not _FIELDS.issuperset(event):
        return "unknown_field"
    for name in STRING_FIELDS:
        value = event.get(name)
        if value is not None and not isinstance(value, str):
            return "wrong_type"
    for name in MAP_FIELDS:
        value = event.get(name)
        if value is not None and (
            not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
        ):
            return "wrong_type"
    for name in _NOT_BLANK:
        value = event.get(name)
        if value is None or not value.strip(" "):  # Spark's trim: spaces only
            return f"missing_{name}" if name != "event_type" else "empty_event_type"
    if event.get("id_type") not in ID_TYPES:
        return "invalid_id_type"
    return None


def _oversized(attributes: dict | None, rules: ValidationRules) -> bool:
    if not attributes:
        return False
    return len(attributes) > rules.max_attributes or any(
        len(value) > rules.max_attribute_value_length for value in attributes.values()
    )


def _alternate_keys(event: dict, key_types: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The event's ids that lookup rows may name: its login and its alternate ids of
    ``key_types``, in their one spelling."""
    keys = []
    member = event.get(MEMBER_ID)
    if MEMBER_ID in key_types and member:
        keys.append((MEMBER_ID, member))
    for kind, value in (event.get("alt_ids") or {}).items():
        if kind in key_types and value:
            keys.append((kind, value.lower() if alt_id_case(kind) else value))
    return tuple(keys)


def _suppressed(suppression: Suppression, event: dict, origin: str) -> bool:
    ids = [origin, event.get(MEMBER_ID)]
    for kind, value in (event.get("alt_ids") or {}).items():
        ids.append(value.lower() if alt_id_case(kind) else value)
    return any(value and suppression.covers(value) for value in ids)


def parse_events(
    batch: MessageBatch,
    *,
    attribute_names: Sequence[str] = (),
    key_types: Sequence[str] = (),
    suppression: Suppression | None = None,
    validation: ValidationRules | None = None,
) -> tuple[LiveEvents, ParseReport]:
    """The batch's events that ingest will accept, with the attributes in ``attribute_names``
    (those segment rules test) and the alternate ids of ``key_types`` (those lookup rows exist
    for); the others counted in the report by reason."""
    rules = validation or ValidationRules()
    report = ParseReport()
    kept: list[int] = []
    origins: list[str] = []
    event_types: list[str] = []
    app_ids: list[str] = []
    times: list[str | None] = []
    keys: list[tuple[tuple[str, str], ...]] = []
    attributes: dict[str, list[str | None]] = {name: [] for name in attribute_names}
    screen = suppression if suppression is not None and suppression.digests else None
    for index, value in enumerate(batch.values.to_pylist()):
        try:
            event = json.loads(value.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, AttributeError):
            report.rejected["malformed_record"] += 1
            continue
        reason = _rejection(event)
        if reason is None and _oversized(event.get("event_attributes"), rules):
            reason = "oversized_attributes"
        if reason is not None:
            report.rejected[reason] += 1
            continue
        origin = normalize_id(event["id_type"], event["user_id"])
        if screen is not None and _suppressed(screen, event, origin):
            report.suppressed += 1
            continue
        kept.append(index)
        origins.append(origin)
        event_types.append(event["event_type"])
        app_ids.append(event["app_id"])
        times.append(event.get("event_time"))
        keys.append(_alternate_keys(event, key_types))
        given = event.get("event_attributes") or {}
        for name, column in attributes.items():
            column.append(given.get(name))
    event_ms, parsed = event_millis(pa.array(times, pa.string()))
    unparsed = int(np.count_nonzero(~parsed))
    if unparsed:
        report.rejected["unparseable_event_time"] += unparsed
    rows = np.asarray(kept, dtype=np.int64)[parsed]
    keep = np.flatnonzero(parsed)
    event_ms = event_ms[parsed]

    def take(values: list) -> np.ndarray:
        column = np.empty(len(values), dtype=object)
        column[:] = values
        return column[keep]

    return (
        LiveEvents(
            partitions=batch.partitions[rows],
            offsets=batch.offsets[rows],
            origins=[origins[i] for i in keep],
            event_types=take(event_types),
            app_ids=take(app_ids),
            event_ms=event_ms,
            days=np.floor_divide(event_ms, _MS_PER_DAY),
            attributes={name: take(column) for name, column in attributes.items()},
            keys=[keys[i] for i in keep],
        ),
        report,
    )
