"""Malformed rows, so that validation and quarantine are exercised on every day.

Corruption happens on the JSON fragments of a line (``"key":value``), which keeps each kind
a one-field change. Every malformed line is still valid JSON; "wrong types" replace an object
by a list, string or number (ingest quarantines any value of another JSON type than the
event contract's, see ``events/json_lines``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.generator.arrow_strings import quoted, take
from profile_store.generator.timestamps import DAY_MS, iso_millis

STREAM_MALFORMED = 20
KINDS = (
    "missing_user_id",
    "unparseable_time",
    "time_outside_day",
    "wrong_types",
    "empty_event_type",
    "oversized_attributes",
)
NOT_MALFORMED = -1

UNPARSEABLE_TIMES = ("yesterday", "13/45/2026", "2026-11-31T25:61:00.000Z", "N/A", "")
WRONG_TYPE_ATTRIBUTES = ('["color","red"]', '"color=red;size=42"')
WRONG_TYPE_ALT_IDS = ("42", '["email_sha256"]')
OVERSIZED_KEY_COUNTS = (101, 128, 150, 200, 256)


@dataclass(frozen=True)
class Corruption:
    """Which rows of a day are malformed (``kind``), and the fragments that replace theirs.

    Drawn once per day, applied to any slice of the day's fragments (``apply``), so that a
    day's lines can be built a slice at a time with the same result as all at once.
    """

    kind: np.ndarray  # per row: index into KINDS, or NOT_MALFORMED
    replacements: tuple[tuple[str, np.ndarray, pa.Array], ...]  # (field, sorted rows, fragments)

    def apply(self, fragments: dict[str, pa.Array], start: int = 0) -> dict[str, pa.Array]:
        """``fragments`` of rows ``start .. start + len`` with the replacements in that range."""
        stop = start + len(next(iter(fragments.values())))
        out = dict(fragments)
        for field, rows, values in self.replacements:
            low, high = np.searchsorted(rows, [start, stop])
            if high > low:
                out[field] = _put(out[field], rows[low:high] - start, values[low:high])
        return out


def plan(event_ms: np.ndarray, share: float, rng: np.random.Generator) -> Corruption:
    """Corrupt ``share`` of the rows, every kind equally often."""
    n = len(event_ms)
    kind = np.full(n, NOT_MALFORMED, dtype=np.int8)
    count = min(n, round(share * n))
    if count == 0:
        return Corruption(kind, ())
    rows = np.sort(rng.choice(n, size=count, replace=False))
    kind[rows] = rng.permutation(np.arange(count) % len(KINDS))
    of_kind = {name: np.flatnonzero(kind == index) for index, name in enumerate(KINDS)}
    replacements = []

    rows = of_kind["missing_user_id"]
    drop_key = rng.random(len(rows)) < 0.5  # half omit the key, half send an empty id
    replacements.append(
        (
            "user_id",
            rows,
            pa.array([None if drop else '"user_id":""' for drop in drop_key], pa.string()),
        )
    )

    rows = of_kind["unparseable_time"]
    unparseable = _pick(rng, "event_time", UNPARSEABLE_TIMES, len(rows), quote=True)
    rows_elsewhere = of_kind["time_outside_day"]
    elsewhere = _fragment(
        "event_time", quoted(iso_millis(_other_day(rng, event_ms[rows_elsewhere])))
    )
    replacements.append(_merged("event_time", (rows, unparseable), (rows_elsewhere, elsewhere)))

    rows = of_kind["wrong_types"]
    on_alt_ids = rng.random(len(rows)) < 0.5
    attributes_rows, alt_rows = rows[~on_alt_ids], rows[on_alt_ids]
    wrong_attributes = _pick(rng, "event_attributes", WRONG_TYPE_ATTRIBUTES, len(attributes_rows))
    replacements.append(
        ("alt_ids", alt_rows, _pick(rng, "alt_ids", WRONG_TYPE_ALT_IDS, len(alt_rows)))
    )

    rows = of_kind["empty_event_type"]
    replacements.append(
        ("event_type", rows, _pick(rng, "event_type", ("",), len(rows), quote=True))
    )

    rows = of_kind["oversized_attributes"]
    oversized = _pick(rng, "event_attributes", _oversized_objects(), len(rows))
    replacements.append(
        _merged("event_attributes", (attributes_rows, wrong_attributes), (rows, oversized))
    )
    return Corruption(kind, tuple(replacements))


def corrupt(
    fragments: dict[str, pa.Array],
    event_ms: np.ndarray,
    share: float,
    rng: np.random.Generator,
) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Corrupt ``share`` of the rows, every kind equally often; return the kind per row."""
    corruption = plan(event_ms, share, rng)
    return corruption.apply(fragments), corruption.kind


def _merged(field: str, *parts: tuple[np.ndarray, pa.Array]) -> tuple[str, np.ndarray, pa.Array]:
    """One field's replacements from disjoint row sets, sorted by row."""
    rows = np.concatenate([part_rows for part_rows, _ in parts])
    values = pa.concat_arrays([values for _, values in parts])
    order = np.argsort(rows, kind="stable")
    return field, rows[order], take(values, order)


def _put(array: pa.Array, rows: np.ndarray, values: pa.Array) -> pa.Array:
    """``array`` with ``array[rows] = values`` (rows sorted ascending)."""
    if len(rows) == 0:
        return array
    mask = np.zeros(len(array), dtype=bool)
    mask[rows] = True
    return pc.replace_with_mask(array, pa.array(mask), values)


def _fragment(field: str, values: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(f'"{field}":', values, "")


def _pick(
    rng: np.random.Generator,
    field: str,
    options: tuple[str, ...],
    count: int,
    quote: bool = False,
) -> pa.Array:
    """``count`` fragments for ``field`` drawn from raw JSON ``options`` (or quoted text)."""
    encoded = [json.dumps(option) if quote else option for option in options]
    choices = pa.array([f'"{field}":{value}' for value in encoded], type=pa.string())
    return take(choices, rng.integers(0, len(options), count))


def _other_day(rng: np.random.Generator, event_ms: np.ndarray) -> np.ndarray:
    """A valid time one to three days away from the event's own day."""
    shift = rng.choice(np.array([-3, -2, -1, 1, 2, 3]), size=len(event_ms))
    day_start = event_ms // DAY_MS * DAY_MS
    return day_start + shift * DAY_MS + rng.integers(0, DAY_MS, len(event_ms))


@cache
def _oversized_objects() -> tuple[str, ...]:
    """Attribute maps above the 100-key limit, as a misbehaving SDK dumps its whole state."""
    return tuple(
        json.dumps(
            {f"custom_param_{index:03d}": str(index * 7) for index in range(keys)},
            separators=(",", ":"),
        )
        for keys in OVERSIZED_KEY_COUNTS
    )
