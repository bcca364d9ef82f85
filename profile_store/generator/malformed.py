"""Malformed rows, so that validation and quarantine are exercised on every day.

Corruption happens on the JSON fragments of a line (``"key":value``), which keeps each kind
a one-field change. Every malformed line is still valid JSON; "wrong types" are structural
(an object replaced by a list, string or number), because Spark's JSON reader silently
coerces numbers into string fields but flags a list where a map is declared.
"""

from __future__ import annotations

import json
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


def corrupt(
    fragments: dict[str, pa.Array],
    event_ms: np.ndarray,
    share: float,
    rng: np.random.Generator,
) -> tuple[dict[str, pa.Array], np.ndarray]:
    """Corrupt ``share`` of the rows, every kind equally often; return the kind per row."""
    n = len(event_ms)
    kind = np.full(n, NOT_MALFORMED, dtype=np.int8)
    count = min(n, round(share * n))
    if count == 0:
        return fragments, kind
    rows = np.sort(rng.choice(n, size=count, replace=False))
    kind[rows] = rng.permutation(np.arange(count) % len(KINDS))
    of_kind = {name: np.flatnonzero(kind == index) for index, name in enumerate(KINDS)}
    out = dict(fragments)

    rows = of_kind["missing_user_id"]
    drop_key = rng.random(len(rows)) < 0.5  # half omit the key, half send an empty id
    out["user_id"] = _put(
        out["user_id"], rows, pa.array(np.where(drop_key, None, '"user_id":""'), type=pa.string())
    )

    rows = of_kind["unparseable_time"]
    out["event_time"] = _put(
        out["event_time"], rows, _pick(rng, "event_time", UNPARSEABLE_TIMES, len(rows), quote=True)
    )

    rows = of_kind["time_outside_day"]
    out["event_time"] = _put(
        out["event_time"],
        rows,
        _fragment("event_time", quoted(iso_millis(_other_day(rng, event_ms[rows])))),
    )

    rows = of_kind["wrong_types"]
    on_alt_ids = rng.random(len(rows)) < 0.5
    attributes_rows, alt_rows = rows[~on_alt_ids], rows[on_alt_ids]
    out["event_attributes"] = _put(
        out["event_attributes"],
        attributes_rows,
        _pick(rng, "event_attributes", WRONG_TYPE_ATTRIBUTES, len(attributes_rows)),
    )
    out["alt_ids"] = _put(
        out["alt_ids"], alt_rows, _pick(rng, "alt_ids", WRONG_TYPE_ALT_IDS, len(alt_rows))
    )

    rows = of_kind["empty_event_type"]
    out["event_type"] = _put(
        out["event_type"], rows, _pick(rng, "event_type", ("",), len(rows), quote=True)
    )

    rows = of_kind["oversized_attributes"]
    out["event_attributes"] = _put(
        out["event_attributes"],
        rows,
        _pick(rng, "event_attributes", _oversized_objects(), len(rows)),
    )
    return out, kind


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
