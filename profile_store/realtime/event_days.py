"""Which landing day each message of a batch belongs to, and its landing line, in Arrow.

Ingest keeps a landing day's event only if its ``event_time`` falls inside that UTC day, so the
lake sink must place each event in the UTC day of its own time, exactly as ingest parses it
(ISO-8601 with ``Z`` or ``+hh:mm``, optional fraction). A message whose time cannot be read
(not JSON, no ``event_time``, another type) lands in the UTC day it reached Kafka: ingest
quarantines it with its reason there, so nothing is dropped on the way to the lake.

The time is found with Arrow's regular expressions over the batch (no per-message Python). In
valid JSON the text ``"event_time":`` can only be a key; a message holding it more than once (an
attribute of that name) or not as a plain string is parsed with ``json`` instead, alone.
"""

from __future__ import annotations

import functools
import json
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_KEY = r'"event_time"\s*:'
_STRING_VALUE = _KEY + r'\s*"(?P<time>[^"\\]*)"'
_TIME = (
    r"^(?P<local>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.\d{1,9})?"
    r"(?P<zone>Z|[+-]\d{2}:\d{2})$"
)
_MS_PER_DAY = 86_400_000


def landing_lines(values: pa.BinaryArray) -> pa.BinaryArray:
    """Each message as one line: a line break inside a message becomes a tab.

    Outside JSON strings both are insignificant white space, inside a string both are invalid
    raw characters, so a valid event stays the same event and an invalid one stays invalid (and
    one quarantined line, instead of several).
    """
    return pc.replace_substring_regex(values, r"[\r\n]", "\t")


def utc_days(times: pa.Array) -> np.ndarray:
    """Days since 1970-01-01 (UTC) of ISO-8601 times with a zone; -1 where one is not."""
    parts = pc.extract_regex(times, _TIME)  # text or bytes; what matches is ASCII
    local = pc.strptime(
        pc.struct_field(parts, "local").cast(pa.string()),
        "%Y-%m-%dT%H:%M:%S",
        "s",
        error_is_null=True,
    )
    zone = pc.struct_field(parts, "zone").cast(pa.string())
    signed = pc.replace_substring_regex(zone, r"^Z$", "+00:00")
    sign = pc.if_else(pc.starts_with(signed, "-"), -1, 1)
    hours = pc.cast(pc.utf8_slice_codeunits(signed, 1, 3), pa.int64())
    minutes = pc.cast(pc.utf8_slice_codeunits(signed, 4, 6), pa.int64())
    offset_s = pc.multiply(sign, pc.add(pc.multiply(hours, 3600), pc.multiply(minutes, 60)))
    seconds = pc.subtract(pc.cast(local, pa.int64()), offset_s)
    days = pc.fill_null(pc.floor(pc.divide(pc.cast(seconds, pa.float64()), 86_400.0)), -1)
    return days.to_numpy(zero_copy_only=False).astype(np.int64)


_STRICT_TIME = (
    r"^(?P<local>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(?P<fraction>\d{1,3}))?"
    r"(?P<zone>[Zz]|[+-]\d{2}:\d{2})$"
)
_MAX_OFFSET_S = 18 * 3600


def event_millis(times: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Epoch ms of event times exactly as ingest accepts them, and which ones it accepts.

    Spark's patterns (date, ``T``, time, an optional fraction, then a zone offset): one to three
    fraction digits, ``Z`` (either case) or an offset of at most 18 hours, a date and time that
    exist (the parsed time is formatted back and compared, as Arrow's parser rolls ``11-31``
    over into December).
    """
    parts = pc.extract_regex(pc.cast(times, pa.string()), _STRICT_TIME)
    local_text = pc.struct_field(parts, "local")
    local = pc.strptime(local_text, "%Y-%m-%dT%H:%M:%S", "s", error_is_null=True)
    exists = pc.equal(pc.strftime(local, "%Y-%m-%dT%H:%M:%S"), local_text)
    fraction = pc.struct_field(parts, "fraction")
    padded = pc.utf8_rpad(pc.if_else(pc.equal(fraction, ""), "0", fraction), 3, "0")
    millis = pc.cast(pc.fill_null(padded, "0"), pa.int64())
    zone = pc.replace_substring_regex(pc.struct_field(parts, "zone"), r"^[Zz]$", "+00:00")
    sign = pc.if_else(pc.starts_with(zone, "-"), -1, 1)
    hours = pc.cast(pc.utf8_slice_codeunits(zone, 1, 3), pa.int64())
    minutes = pc.cast(pc.utf8_slice_codeunits(zone, 4, 6), pa.int64())
    offset_s = pc.add(pc.multiply(hours, 3600), pc.multiply(minutes, 60))
    zone_ok = pc.and_(pc.less_equal(minutes, 59), pc.less_equal(offset_s, _MAX_OFFSET_S))
    seconds = pc.subtract(pc.cast(local, pa.int64()), pc.multiply(sign, offset_s))
    epoch_ms = pc.add(pc.multiply(seconds, 1000), millis)
    valid = pc.fill_null(pc.and_(exists, zone_ok), False).to_numpy(zero_copy_only=False)
    values = pc.fill_null(epoch_ms, 0).to_numpy(zero_copy_only=False).astype(np.int64)
    return values, valid.astype(bool)


def _time_of(value: bytes) -> bytes | None:
    """``event_time`` of one message parsed as JSON, if it is an object holding a string."""
    try:
        event = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None
    time = event.get("event_time") if isinstance(event, dict) else None
    return time.encode() if isinstance(time, str) else None


def event_days(values: pa.BinaryArray, timestamps_ms: np.ndarray) -> np.ndarray:
    """The landing day of each message (days since 1970-01-01): its event time's UTC day, else
    the UTC day of its Kafka timestamp."""
    keys = pc.count_substring_regex(values, _KEY).to_numpy(zero_copy_only=False)
    found = pc.extract_regex(values, _STRING_VALUE)
    times = pc.struct_field(found, "time")
    plain = (keys == 1) & found.is_valid().to_numpy(zero_copy_only=False)
    unusual = np.flatnonzero((keys >= 1) & ~plain)
    if len(unusual):
        parsed = pa.array([_time_of(values[int(i)].as_py()) for i in unusual], pa.binary())
        mask = np.zeros(len(values), dtype=bool)
        mask[unusual] = True
        times = pc.replace_with_mask(times, pa.array(mask), parsed)
    days = utc_days(times)
    arrival = np.floor_divide(np.asarray(timestamps_ms, dtype=np.int64), _MS_PER_DAY)
    return np.where(days >= 0, days, arrival)


@functools.lru_cache(maxsize=4096)
def day_text(day: int) -> str:
    """``YYYY-MM-DD`` of a day number."""
    return datetime.fromtimestamp(day * 86_400, tz=UTC).date().isoformat()
