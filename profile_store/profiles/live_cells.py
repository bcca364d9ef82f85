"""Live cells: what the live profile job adds to a profile row until a daily run covers it.

One cell per *lineage*, the events of one id (its *origin*) on one UTC day, read from one Kafka
partition (the topic is keyed by id, so an id's events share a partition and its offsets order
them):

```
u:<YYYY-MM-DD>|<partition>|<origin id>   JSON {"o": offset, "v": version, "h": half-life ms,
                                               "p": the person it was spread over,
                                               "s": {segment: expiry ms},
                                               "f": {event type: [value, last ms]}}
```

``o`` is the highest offset whose event the cell holds: an event at or below it is never
applied again, so a replayed batch adds nothing. ``v`` is the HBase timestamp the cell is
written with (the writing batch's last offset of the partition, plus one): a later batch of the
partition always writes a higher version, so a stale write (a member that lost its partitions
and wakes up, a retried batch smaller than the one before it) never hides a newer state, and a
bounded delete never hides a later write. The same lineage cell is written on every row of the
person, so any id reads the person's live events.

A legacy ``u:<segment>`` cell (a segment id never holds ``|``) is an unsynced segment of a feed
(``profiles/unsynced.py``); the two never share a qualifier.

**Superseded.** A row whose daily state covers day D (``s:as_of`` at or after D's end) already
counts D's events, so its lineage cells of days up to D are ignored by reads and deleted by the
daily run of D (``delete_superseded``): a read never counts an event twice, and after the run
the row is what a run without the live path writes.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from profile_store.profiles.table import (
    PROFILE_PREFIX,
    UNSYNCED,
    delete_up_to,
    is_live_qualifier,
)


class LiveCellError(ValueError):
    """A live cell whose qualifier or value is not what ``live_cells`` writes."""


@dataclass(frozen=True, order=True)
class Lineage:
    """The events of ``origin`` on ``day`` (``YYYY-MM-DD``) from Kafka ``partition``."""

    day: str
    partition: int
    origin: str

    @functools.cached_property
    def qualifier(self) -> bytes:
        return f"{self.day}|{self.partition}|{self.origin}".encode()

    @functools.cached_property
    def column(self) -> bytes:
        return UNSYNCED + b":" + self.qualifier


@dataclass(frozen=True)
class LiveCell:
    """A lineage's state: its segments (max expiry) and decaying counters (value at last ms)."""

    through: int  # highest Kafka offset applied
    version: int  # HBase timestamp of the cell
    half_life_ms: int
    segments: dict[str, int] = field(default_factory=dict)
    counters: dict[str, tuple[float, int]] = field(default_factory=dict)
    # The person the cell was spread over (every row of it), as its rows named it then
    # (``person_identity``): rows that name it otherwise were compacted since, maybe into
    # another person (a merge, a split).
    spread_over: str = ""


EMPTY_THROUGH = -1


def parse_qualifier(qualifier: bytes) -> Lineage:
    try:
        day, partition, origin = qualifier.decode().split("|", 2)
        date.fromisoformat(day)
        if not origin:
            raise ValueError("empty origin id")
        return Lineage(day, int(partition), origin)
    except (UnicodeDecodeError, ValueError) as error:
        raise LiveCellError(f"live cell u:{qualifier!r}: {error}") from None


def encode_cell(cell: LiveCell) -> bytes:
    """Canonical JSON (sorted keys): one state, one spelling, so a rewrite of an unchanged
    state puts the same bytes."""
    body = {
        "o": cell.through,
        "v": cell.version,
        "h": cell.half_life_ms,
        "p": cell.spread_over,
        "s": cell.segments,
        "f": {event: [value, last] for event, (value, last) in cell.counters.items()},
    }
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def decode_cell(value: bytes) -> LiveCell:
    try:
        body = json.loads(value.decode())
        half_life = int(body["h"])
        if half_life <= 0:
            raise ValueError(f"half-life {half_life}")
        return LiveCell(
            through=int(body["o"]),
            version=int(body["v"]),
            half_life_ms=half_life,
            segments={str(k): int(v) for k, v in body["s"].items()},
            counters={str(k): (float(v), int(t)) for k, (v, t) in body["f"].items()},
            spread_over=str(body.get("p", "")),
        )
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError) as error:
        raise LiveCellError(f"live cell value {value[:80]!r}: {error!r}") from None


def person_identity(as_of_ms: int, master: str, devices: int) -> str:
    """A person as its rows name it: their daily state, master and number of ids. Compaction
    writes all of a person's rows with one; a merge or a split changes it."""
    return f"{as_of_ms}|{devices}|{master}"


@functools.lru_cache(maxsize=4096)
def day_end_ms(day: str) -> int:
    """The end of a UTC day (the next midnight), in epoch ms: what ``s:as_of`` is after it."""
    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return int((start + timedelta(days=1)).timestamp() * 1000)


def superseded(day: str, as_of_ms: int) -> bool:
    """Whether a row whose daily state is as of ``as_of_ms`` already counts ``day``'s events."""
    return day_end_ms(day) <= as_of_ms


@dataclass(frozen=True)
class LiveState:
    """What a row's live cells add to its daily state."""

    segments: dict[str, int]  # segment -> latest expiry
    counters: dict[str, list[tuple[float, int, int]]]  # event -> [(value, last ms, half-life)]


def live_state(cells: Mapping[bytes, bytes], as_of_ms: int) -> LiveState:
    """The lineage cells of a row (``qualifier -> value``) not superseded by its daily state."""
    segments: dict[str, int] = {}
    counters: dict[str, list[tuple[float, int, int]]] = {}
    for qualifier, value in cells.items():
        if superseded(parse_qualifier(qualifier).day, as_of_ms):
            continue
        cell = decode_cell(value)
        for segment, expiry in cell.segments.items():
            segments[segment] = max(expiry, segments.get(segment, expiry))
        for event, (count, last) in cell.counters.items():
            counters.setdefault(event, []).append((count, last, cell.half_life_ms))
    return LiveState(segments, counters)


def merge_counter(
    a: tuple[float, int] | None, b: tuple[float, int], half_life_ms: int
) -> tuple[float, int]:
    """Decay both to the later time and add: commutative and associative."""
    if a is None:
        return b
    last = max(a[1], b[1])
    return (
        a[0] * math.pow(2.0, (a[1] - last) / half_life_ms)
        + b[0] * math.pow(2.0, (b[1] - last) / half_life_ms),
        last,
    )


def superseded_cells(
    rows: Iterable[tuple[bytes, Mapping[bytes, tuple[bytes, int]]]], day: str
) -> Iterator[tuple[bytes, bytes, int]]:
    """``(row key, column, timestamp)`` of each lineage cell of ``day`` or earlier."""
    end = day_end_ms(day)
    for key, cells in rows:
        for name, (_value, timestamp) in cells.items():
            qualifier = name.partition(b":")[2]
            if not is_live_qualifier(qualifier):
                continue
            try:
                lineage = parse_qualifier(qualifier)
            except LiveCellError:
                continue  # not the job's: left for a human to see
            if day_end_ms(lineage.day) <= end:
                yield key, name, timestamp


def delete_superseded(table, day: date, batch_size: int = 1000) -> int:
    """Delete every lineage cell of ``day`` and before (each only up to its own version, so a
    later write survives); one scan of the ``u`` family. The daily run of ``day`` calls it once
    its rows are written; returns the cells deleted."""
    scan = table.scan(
        row_prefix=PROFILE_PREFIX, columns=[UNSYNCED], include_timestamp=True, batch_size=batch_size
    )
    return delete_up_to(table, list(superseded_cells(scan, day.isoformat())))
