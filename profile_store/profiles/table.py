"""The ``profiles`` HBase table: row keys, families and cell codecs.

One table holds three kinds of rows, told apart by the first bytes of the key (and by
``s:type``), so a profile id can never collide with an edge or a lookup:

```
p|<profile id>                        a profile (device or cookie id, raw bytes after "p|")
  s:type        b"profile"
  s:master      master profile id; ABSENT on a master (suppressed, not NULL)
  s:first_seen  epoch ms of the profile's first event (ASCII decimal)
  s:id_type     cookie | idfa | gaid
  s:devices     ids in the person's component, this one included (merged devices)
  s:as_of       epoch ms the compaction computed this row for
  g:<segment>   expiry, epoch ms: the union of the COMPONENT's segments, max expiry wins
  u:<segment>   expiry, epoch ms: an unsynced segment written by a real-time feed; the next
                compaction folds it into the component and deletes it
  u:<day>|<partition>|<id>
                a live cell: the live profile job's segments and counters of one id's events
                of one day (``profiles/live_cells.py``); reads add it until a daily run covers
                the day, and that run deletes it
  a:<id>        another profile of the component (value: its id type); capped, see s:devices
  f:<event>     decaying counter of the component (``encode_counter``: value, time, half-life)

e|<a>|<b>                             a bridging edge, a < b (percent-encoded ``%`` and ``|``)
  s:type        b"edge"
  p:weight      highest weight of the rules linking a and b (ASCII float)
  p:rules       comma-separated rule names
  p:first_seen  epoch ms

l|<key type>|<key>                    lookup of an alternate id or login
  s:type        b"lookup"
  s:profile     the person's master profile id
```

A bidder reads ``p|<id>`` (one round trip) and gets the person's segments; with only an
alternate id it reads ``l|...`` then ``p|...`` (two).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

PROFILE_TABLE = "profiles"
FAMILIES = {
    "s": {"max_versions": 1},
    "g": {"max_versions": 1},
    "u": {"max_versions": 1},
    "a": {"max_versions": 1},
    "f": {"max_versions": 1},
    "p": {"max_versions": 1},
}

PROFILE_PREFIX = b"p|"
EDGE_PREFIX = b"e|"
LOOKUP_PREFIX = b"l|"

TYPE = b"s:type"
MASTER = b"s:master"
FIRST_SEEN = b"s:first_seen"
ID_TYPE = b"s:id_type"
DEVICES = b"s:devices"
AS_OF = b"s:as_of"
LOOKUP_PROFILE = b"s:profile"
EDGE_WEIGHT = b"p:weight"
EDGE_RULES = b"p:rules"
EDGE_FIRST_SEEN = b"p:first_seen"

SEGMENTS = b"g"
UNSYNCED = b"u"
ASSOCIATIONS = b"a"
FEATURES = b"f"

TYPE_PROFILE = b"profile"
TYPE_EDGE = b"edge"
TYPE_LOOKUP = b"lookup"

_COUNTER = struct.Struct(">dqq")
LIVE_SEPARATOR = b"|"


def is_live_qualifier(qualifier: bytes) -> bool:
    """A live cell's ``u:`` qualifier; a segment id (an unsynced segment's) never holds ``|``."""
    return LIVE_SEPARATOR in qualifier


def _encode_component(value: str) -> bytes:
    if not value:
        raise ValueError("profile table key: components must be non-empty strings")
    return value.replace("%", "%25").replace("|", "%7C").encode()


def profile_key(profile_id: str) -> bytes:
    """``p|<id>``: the id's own bytes, so a bidder builds the key without any encoding step."""
    if not profile_id:
        raise ValueError("profile id: must be a non-empty string")
    return PROFILE_PREFIX + profile_id.encode()


def profile_id_of(key: bytes) -> str:
    if not key.startswith(PROFILE_PREFIX):
        raise ValueError(f"not a profile row key: {key!r}")
    return key[len(PROFILE_PREFIX) :].decode()


def edge_key(profile_a: str, profile_b: str) -> bytes:
    """``e|<a>|<b>`` with the pair sorted, so either order names the same row."""
    a, b = sorted((profile_a, profile_b))
    return EDGE_PREFIX + _encode_component(a) + b"|" + _encode_component(b)


def lookup_key(key_type: str, key: str) -> bytes:
    return LOOKUP_PREFIX + _encode_component(key_type) + b"|" + _encode_component(key)


def column(family: bytes, qualifier: str) -> bytes:
    return family + b":" + qualifier.encode()


def encode_ms(epoch_ms: int) -> bytes:
    return str(int(epoch_ms)).encode()


def decode_ms(value: bytes) -> int:
    return int(value)


def encode_counter(value: float, last_ms: int, half_life_ms: int) -> bytes:
    """A decaying counter: its value at ``last_ms`` and the half-life it decays with.

    The half-life travels with the value, so a reader never decays with the wrong one.
    """
    return _COUNTER.pack(float(value), int(last_ms), int(half_life_ms))


def decode_counter(value: bytes) -> tuple[float, int, int]:
    """``(value, last_ms, half_life_ms)``."""
    return _COUNTER.unpack(value)


def decayed(value: float, last_ms: int, half_life_ms: int, now_ms: int) -> float:
    """The counter's value at ``now_ms`` (never grows: a time before ``last_ms`` is ``last_ms``)."""
    elapsed = max(0, now_ms - last_ms)
    return value * math.pow(2.0, -elapsed / half_life_ms)


@dataclass(frozen=True)
class ProfileRow:
    """A profile row as written by compaction and read by the real-time path."""

    profile: str
    id_type: str
    master: str  # equal to ``profile`` on a master
    first_seen_ms: int
    devices: int
    as_of_ms: int
    segments: dict[str, int] = field(default_factory=dict)  # segment -> expiry ms
    counters: dict[str, tuple[float, int, int]] = field(default_factory=dict)
    associations: dict[str, str] = field(default_factory=dict)  # profile -> id type
    unsynced: dict[str, int] = field(default_factory=dict)
    live: dict[bytes, bytes] = field(default_factory=dict)  # live cells: qualifier -> value

    @property
    def is_master(self) -> bool:
        return self.master == self.profile


def profile_cells(row: ProfileRow) -> dict[bytes, bytes]:
    """Every cell of a compacted profile row (``u:`` cells are the feed's, never written here)."""
    cells = {
        TYPE: TYPE_PROFILE,
        FIRST_SEEN: encode_ms(row.first_seen_ms),
        ID_TYPE: row.id_type.encode(),
        DEVICES: str(row.devices).encode(),
        AS_OF: encode_ms(row.as_of_ms),
    }
    if not row.is_master:
        cells[MASTER] = row.master.encode()
    for segment, expiry in row.segments.items():
        cells[column(SEGMENTS, segment)] = encode_ms(expiry)
    for event, (value, last_ms, half_life_ms) in row.counters.items():
        cells[column(FEATURES, event)] = encode_counter(value, last_ms, half_life_ms)
    for other, id_type in row.associations.items():
        cells[column(ASSOCIATIONS, other)] = id_type.encode()
    return cells


def decode_profile(key: bytes, cells: dict[bytes, bytes]) -> ProfileRow:
    """The row from happybase's ``{column: value}``; raises ``ValueError`` if it is no profile."""
    if cells.get(TYPE) != TYPE_PROFILE:
        raise ValueError(f"{key!r} is not a profile row (s:type={cells.get(TYPE)!r})")
    profile = profile_id_of(key)
    segments: dict[str, int] = {}
    unsynced: dict[str, int] = {}
    live: dict[bytes, bytes] = {}
    counters: dict[str, tuple[float, int, int]] = {}
    associations: dict[str, str] = {}
    for name, value in cells.items():
        family, _, qualifier = name.partition(b":")
        if family == SEGMENTS:
            segments[qualifier.decode()] = decode_ms(value)
        elif family == UNSYNCED and is_live_qualifier(qualifier):
            live[qualifier] = value
        elif family == UNSYNCED:
            unsynced[qualifier.decode()] = decode_ms(value)
        elif family == FEATURES:
            counters[qualifier.decode()] = decode_counter(value)
        elif family == ASSOCIATIONS:
            associations[qualifier.decode()] = value.decode()
    return ProfileRow(
        profile=profile,
        id_type=cells.get(ID_TYPE, b"").decode(),
        master=cells[MASTER].decode() if MASTER in cells else profile,
        first_seen_ms=decode_ms(cells[FIRST_SEEN]) if FIRST_SEEN in cells else 0,
        devices=int(cells.get(DEVICES, b"1")),
        as_of_ms=decode_ms(cells[AS_OF]) if AS_OF in cells else 0,
        segments=segments,
        counters=counters,
        associations=associations,
        unsynced=unsynced,
        live=live,
    )


def edge_cells(weight: float, rules: list[str], first_seen_ms: int) -> dict[bytes, bytes]:
    return {
        TYPE: TYPE_EDGE,
        EDGE_WEIGHT: repr(float(weight)).encode(),
        EDGE_RULES: ",".join(sorted(set(rules))).encode(),
        EDGE_FIRST_SEEN: encode_ms(first_seen_ms),
    }


def lookup_cells(master: str) -> dict[bytes, bytes]:
    return {TYPE: TYPE_LOOKUP, LOOKUP_PROFILE: master.encode()}


def delete_up_to(table, cells: Iterable[tuple[bytes, bytes, int]]) -> int:
    """Delete ``(row key, column, timestamp)`` cells, each only up to its own timestamp.

    A delete bounded by the timestamp the cell was read with removes that version and older
    ones, so a newer write to the same column in between (a compaction's fresh expiry, the
    feed's new segment) survives. Writers put with the server clock, so their later puts never
    fall under the bound. One ``mutateRowsTs`` per distinct timestamp; returns the cells deleted.
    """
    by_timestamp: dict[int, dict[bytes, list[bytes]]] = {}
    count = 0
    for key, name, timestamp in cells:
        by_timestamp.setdefault(timestamp, {}).setdefault(key, []).append(name)
        count += 1
    for timestamp, rows in sorted(by_timestamp.items()):
        with table.batch(timestamp=timestamp) as batch:
            for key, names in rows.items():
                batch.delete(key, columns=names)
    return count


def ensure_table(connection, name: str = PROFILE_TABLE) -> None:
    """Create the table if it is missing (a no-op on every later run)."""
    if name.encode() not in connection.tables():
        connection.create_table(name, FAMILIES)
