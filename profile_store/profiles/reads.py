"""The real-time reads of the ``profiles`` table: what the bidders and the service call.

A bidder has about 10 ms for everything, so what a read costs is counted in HBase
round trips (sequential requests), and every method says how many it makes:

| read | round trips |
| --- | --- |
| ``segments(id)`` | 1 (``p|id``) |
| ``segments(id, key_type=t)`` | 1 if ``p|id`` exists, else 2 (``l|t|id`` then ``p|master``) |
| ``segments_many(ids)``, ``segments_batch`` | 1 for up to ``MAX_IDS`` ids; 2 with a ``key_type`` |
| ``connected(a, b)`` | 1 (``p|a``, ``p|b`` and ``e|a|b`` in one multi-get) |
| ``linked_profiles(id)``, ``profile(id)`` | 1 |
| ``masters(page_size)`` | 3-4 (open, fetch, close a server-filtered scanner) |

Alternate ids: a login or hashed email is not a row of its own; ``l|<type>|<value>``
names the person's master, whose row carries the person's segments. The caller says which kind
of id it holds with ``key_type``: ``None`` means a profile (device or cookie) id; a type means
"a profile id or, failing that, an alternate id of this type". Both rows are read in the first
round trip and a profile row wins, so a known device id never pays for the lookup and an
alternate id costs exactly two.

Segments are live while their expiry is in the future: an expiry at or before ``now_ms`` is
never returned. A profile's ``g:`` cells are its person's compacted segments, its ``u:`` cells
the ones a real-time feed added since the last compaction; both count, and the later
expiry wins. Counters are decayed to ``now_ms`` with the half-life stored beside them. The live
profile job's cells (``profiles/live_cells.py``) add the person's events of the days the row's
daily state (``s:as_of``) does not cover yet: their segments like ``u:``, their counters
decayed and added to the daily ones.
A ``p|`` row holding only ``u:`` cells (the feed wrote it before any compaction saw the id)
answers ``segments`` and ``profile`` as a person of its own; the identity reads (``connected``,
``linked_profiles``, ``masters``) know the rows compaction wrote.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TypeGuard

import happybase

from profile_store.identity.rules import DEFAULT_ALT_ID_WEIGHTS, MEMBER_ID
from profile_store.identity.settings import (
    IDENTITY_CONFIG_ENV,
    IdentityConfigError,
    identity_rules_from_env,
)
from profile_store.profiles.live_cells import LiveCellError, LiveState, live_state
from profile_store.profiles.table import (
    AS_OF,
    ASSOCIATIONS,
    DEVICES,
    EDGE_RULES,
    EDGE_WEIGHT,
    LOOKUP_PROFILE,
    MASTER,
    PROFILE_PREFIX,
    SEGMENTS,
    TYPE,
    TYPE_EDGE,
    TYPE_LOOKUP,
    TYPE_PROFILE,
    UNSYNCED,
    ProfileRow,
    decayed,
    decode_profile,
    edge_key,
    lookup_key,
    profile_id_of,
    profile_key,
)

MAX_IDS = 1000
"""Most ids in one ``segments_many`` call (a bidder sends 25)."""
MAX_PAGE_SIZE = 1000
MAX_LINKED = 1000
MAX_ID_BYTES = 1024
"""Longest id, in UTF-8 bytes (HBase row keys may be 32 KiB; no real id comes near this)."""

PROFILE_STOP = PROFILE_PREFIX[:-1] + bytes([PROFILE_PREFIX[-1] + 1])
"""First row key after every ``p|`` key."""
SEGMENT_COLUMNS = [TYPE, LOOKUP_PROFILE, AS_OF, SEGMENTS, UNSYNCED]
CONNECTION_COLUMNS = [TYPE, MASTER, EDGE_WEIGHT, EDGE_RULES]
LINKED_COLUMNS = [TYPE, MASTER, DEVICES, ASSOCIATIONS]
MASTERS_FILTER = (
    "SingleColumnValueFilter('s', 'master', =, 'binary:', false, true) AND KeyOnlyFilter()"
)
"""Keeps rows WITHOUT ``s:master`` (a master's is suppressed): a row whose
``s:master`` holds an id fails the ``= ''`` comparison and is dropped on the server; a missing
column passes (``filterIfMissing`` false). ``s:master`` must be among the scanned columns, or
the filter never sees it. The key-only part keeps the reply to row keys."""

_DECODE_ERRORS = (ValueError, KeyError, struct.error)

OpenTable = Callable[[], AbstractContextManager[happybase.Table]]


LOOKUP_KEY_TYPES: tuple[str, ...] = (MEMBER_ID, *DEFAULT_ALT_ID_WEIGHTS)
"""The alternate-id types the default bridging rules write lookup rows for."""

KEY_TYPES_ENV = "PROFILES_KEY_TYPES"


def key_types_from_env(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``PROFILES_KEY_TYPES`` (comma-separated), else the kinds the identity configuration
    bridges (``PROFILES_IDENTITY_CONFIG``): compaction writes a lookup row for each of those."""
    env = os.environ if environ is None else environ
    listed = tuple(part.strip() for part in env.get(KEY_TYPES_ENV, "").split(",") if part.strip())
    if listed:
        return listed
    try:
        rules = identity_rules_from_env(env)
    except IdentityConfigError as error:
        raise InvalidRequest(IDENTITY_CONFIG_ENV, str(error)) from error
    return (MEMBER_ID, *rules.bridging_alt_id_kinds)


class InvalidRequest(ValueError):
    """An input is out of bounds; the message starts with the name of the field."""

    def __init__(self, field_name: str, problem: str) -> None:
        super().__init__(f"{field_name}: {problem}")
        self.field = field_name
        self.problem = problem


class CorruptRow(Exception):
    """A row's cells do not decode as ``table.py`` writes them; the message names the row."""


@dataclass(frozen=True)
class ProfileSegments:
    """The live segments read for one id."""

    id: str
    profile: str  # the row that answered: ``id`` itself, or the master an alternate id names
    via_lookup: bool
    segments: dict[str, int]  # segment -> expiry ms, sorted by segment


@dataclass(frozen=True)
class SegmentsBatch:
    """The live segments read for many ids, and which of them are unknown."""

    segments: dict[str, dict[str, int]]  # every id asked, once, in order; unknown ids: {}
    unknown: list[str]  # no profile row (nor, with a key type, a lookup row naming one)


@dataclass(frozen=True)
class Edge:
    """A direct bridging edge between two profiles (weight = link probability)."""

    weight: float
    rules: tuple[str, ...]


@dataclass(frozen=True)
class Connection:
    """Whether two profile ids are one person: both exist and share a master."""

    a: str
    b: str
    connected: bool
    master_a: str | None  # None: no such profile
    master_b: str | None
    edge: Edge | None  # the ``e|a|b`` row, if the pair has one (star edges touch a master)


@dataclass(frozen=True)
class LinkedProfiles:
    """The other ids of a profile's person, as stored on its row (capped at write time)."""

    profile: str
    master: str
    devices: int  # ids in the person, this one included
    linked: dict[str, str]  # other id -> its id type, sorted by id, at most ``limit``
    truncated: bool  # the person has more other ids than ``linked`` lists


@dataclass(frozen=True)
class MastersPage:
    """One page of master profile ids in row-key order; ``next_after`` resumes after it."""

    ids: list[str]
    next_after: str | None  # None: this was the last page


@dataclass(frozen=True)
class ProfileView:
    """A whole profile row as of ``now_ms``: live segments only, counters decayed."""

    profile: str
    id_type: str
    master: str
    first_seen_ms: int
    devices: int
    as_of_ms: int
    now_ms: int
    segments: dict[str, int]  # live ``g:`` and ``u:``, the later expiry winning
    unsynced: dict[str, int]  # the live ``u:`` part, not yet spread to the person
    counters: dict[str, float]  # event -> value decayed to ``now_ms``
    linked: dict[str, str] = field(default_factory=dict)

    @property
    def is_master(self) -> bool:
        return self.master == self.profile


def current_ms() -> int:
    return time.time_ns() // 1_000_000


def live_segments(now_ms: int, *expiries: Mapping[str, int]) -> dict[str, int]:
    """Segments expiring after ``now_ms`` across ``expiries`` (e.g. g and u), later expiry wins."""
    live: dict[str, int] = {}
    for source in expiries:
        for segment, expiry in source.items():
            if expiry > now_ms and expiry > live.get(segment, now_ms):
                live[segment] = expiry
    return dict(sorted(live.items()))


class ProfileReader:
    """Reads the ``profiles`` table; ``open_table`` yields a happybase table per call.

    Stateless apart from ``open_table`` (e.g. ``hbase.pool.table_opener(pool, "profiles")``),
    so one reader serves every thread of a service.
    """

    def __init__(
        self, open_table: OpenTable, key_types: Collection[str] | None = LOOKUP_KEY_TYPES
    ) -> None:
        """``key_types``: the alternate-id types the table has lookup rows for (what
        ``identity_edges`` bridges on); any other ``key_type`` is refused, so that a typo is an
        error rather than "no profile". None accepts every type."""
        self.open_table = open_table
        self.key_types = None if key_types is None else tuple(key_types)

    def _check_key_type(self, key_type: str | None) -> None:
        check_optional_id("key_type", key_type)
        if key_type is not None and self.key_types is not None and key_type not in self.key_types:
            known = ", ".join(self.key_types)
            raise InvalidRequest("key_type", f"unknown key type {key_type!r} (known: {known})")

    def segments(
        self, id: str, key_type: str | None = None, now_ms: int | None = None
    ) -> ProfileSegments | None:
        """The live segments of ``id``'s person; None if neither row exists. 1 or 2 round trips.

        ``key_type`` None: ``id`` is a profile id, one read of ``p|id``. Given: ``p|id`` and
        ``l|key_type|id`` are read together; without a profile row the lookup's master is read
        next (2 round trips in all). ``u:`` segments count for the row that carries them only,
        until compaction spreads them over the person.
        """
        _check_id("id", id)
        self._check_key_type(key_type)
        now = check_now(now_ms)
        own = profile_key(id)
        keys = [own] if key_type is None else [own, lookup_key(key_type, id)]
        with self.open_table() as table:
            rows = dict(table.rows(keys, columns=SEGMENT_COLUMNS))
            if _is_profile(rows.get(own)):
                return ProfileSegments(id, id, False, _live_row_segments(own, rows[own], now))
            master = _lookup_target(keys[-1], rows.get(keys[-1])) if key_type else None
            if master is None:
                return None
            key = profile_key(master)
            cells = table.row(key, columns=SEGMENT_COLUMNS)
        if not _is_profile(cells):
            return None
        return ProfileSegments(id, master, True, _live_row_segments(key, cells, now))

    def segments_many(
        self, ids: Sequence[str], key_type: str | None = None, now_ms: int | None = None
    ) -> dict[str, dict[str, int]]:
        """Live segments per id (each id once, in the given order); unknown ids map to ``{}``.

        ``segments_batch`` without the list of unknown ids: what a bidder needs.
        """
        return self.segments_batch(ids, key_type, now_ms).segments

    def segments_batch(
        self, ids: Sequence[str], key_type: str | None = None, now_ms: int | None = None
    ) -> SegmentsBatch:
        """Live segments per id (each id once, in the given order), and the unknown ids.

        One round trip (one multi-get) for up to ``MAX_IDS`` profile ids: a bidder's batch of 25
        costs what a single read does. With ``key_type``, lookup rows are read in that same trip
        and the masters of the alternate ids among ``ids`` in a second one (at most two
        sequential reads). An unknown id and a profile without live segments both map to
        ``{}`` (a bidder treats them alike); ``unknown`` tells them apart.
        """
        unique = _check_ids(ids)
        self._check_key_type(key_type)
        now = check_now(now_ms)
        keys = [profile_key(i) for i in unique]
        lookups = [lookup_key(key_type, i) for i in unique] if key_type else []
        answers: dict[str, dict[str, int]] = {}
        with self.open_table() as table:
            rows = dict(table.rows(keys + lookups, columns=SEGMENT_COLUMNS))
            via: dict[str, bytes] = {}
            for i, key in enumerate(keys):
                if _is_profile(rows.get(key)):
                    answers[unique[i]] = _live_row_segments(key, rows[key], now)
                elif lookups:
                    master = _lookup_target(lookups[i], rows.get(lookups[i]))
                    if master is not None:
                        via[unique[i]] = profile_key(master)
            if via:
                masters = dict(table.rows(sorted(set(via.values())), columns=SEGMENT_COLUMNS))
                for asked, key in via.items():
                    if _is_profile(masters.get(key)):
                        answers[asked] = _live_row_segments(key, masters[key], now)
        segments = {i: answers.get(i, {}) for i in unique}
        return SegmentsBatch(segments, [i for i in unique if i not in answers])

    def connected(self, a: str, b: str) -> Connection:
        """Whether ``a`` and ``b`` are one person, for any two profile ids. 1 round trip.

        An edge lookup alone only answers when one of the two is the master; reading both
        profile rows' ``s:master`` (and the edge row, for its weight) in one multi-get answers
        for two non-masters at the same cost. An unknown id is connected to nothing.
        """
        _check_id("a", a)
        _check_id("b", b)
        key_a, key_b = profile_key(a), profile_key(b)
        pair = edge_key(a, b) if a != b else None
        keys = [key_a] if pair is None else [key_a, key_b, pair]
        with self.open_table() as table:
            rows = dict(table.rows(keys, columns=CONNECTION_COLUMNS))
        master_a = _master_of(key_a, rows.get(key_a))
        master_b = _master_of(key_b, rows.get(key_b))
        return Connection(
            a=a,
            b=b,
            connected=master_a is not None and master_a == master_b,
            master_a=master_a,
            master_b=master_b,
            edge=None if pair is None else _edge(pair, rows.get(pair)),
        )

    def linked_profiles(self, id: str, limit: int = 100) -> LinkedProfiles | None:
        """The other ids of ``id``'s person from its ``a:`` family; None if unknown. 1 round trip.

        Compaction caps ``a:`` (a super-node guard), so the row is read whole and cut to
        ``limit`` here; ``truncated`` says the person (``s:devices``) has more ids than listed.
        """
        _check_id("id", id)
        check_count("limit", limit, 1, MAX_LINKED)
        key = profile_key(id)
        with self.open_table() as table:
            cells = table.row(key, columns=LINKED_COLUMNS)
        if not _is_profile(cells):
            return None
        row = _decoded(key, cells)
        linked = dict(sorted(row.associations.items())[:limit])
        return LinkedProfiles(
            profile=id,
            master=row.master,
            devices=row.devices,
            linked=linked,
            truncated=len(linked) < row.devices - 1,
        )

    def masters(self, page_size: int = 100, after: str | None = None) -> MastersPage:
        """A page of master ids (the unique persons). 3-4 round trips.

        One scanner over ``p|`` filtered on the server (``MASTERS_FILTER``), so non-master rows
        never cross the wire. It asks for one row more than ``page_size`` to know whether another
        page exists; ``after`` is the previous page's ``next_after`` (the last id it returned),
        so every master is listed exactly once across pages.
        """
        check_count("page_size", page_size, 1, MAX_PAGE_SIZE)
        check_optional_id("after", after)
        start = PROFILE_PREFIX if after is None else profile_key(after) + b"\x00"
        with self.open_table() as table:
            keys = [
                key
                for key, _ in table.scan(
                    row_start=start,
                    row_stop=PROFILE_STOP,
                    columns=[TYPE, MASTER],
                    filter=MASTERS_FILTER,
                    limit=page_size + 1,
                    batch_size=page_size + 1,
                )
            ]
        ids = [profile_id_of(key) for key in keys[:page_size]]
        return MastersPage(ids=ids, next_after=ids[-1] if len(keys) > page_size else None)

    def profile(self, id: str, now_ms: int | None = None) -> ProfileView | None:
        """The whole row of ``id`` as of ``now_ms``; None if unknown. 1 round trip.

        Expired segments are left out and counters decayed to ``now_ms`` (a time before a
        counter's last update reads its stored value: counters never grow with time).
        """
        _check_id("id", id)
        now = check_now(now_ms)
        key = profile_key(id)
        with self.open_table() as table:
            cells = table.row(key)
        if not _is_profile(cells):
            return None
        row = _decoded(key, cells)
        live = _live(key, row)
        parts = {event: [counter] for event, counter in row.counters.items()}
        for event, added in live.counters.items():
            parts.setdefault(event, []).extend(added)
        try:
            counters = {
                event: sum(
                    decayed(value, last_ms, half_life_ms, now)
                    for value, last_ms, half_life_ms in found
                )
                for event, found in sorted(parts.items())
            }
        except ZeroDivisionError:
            raise CorruptRow(f"{key!r}: a counter with a zero half-life") from None
        return ProfileView(
            profile=row.profile,
            id_type=row.id_type,
            master=row.master,
            first_seen_ms=row.first_seen_ms,
            devices=row.devices,
            as_of_ms=row.as_of_ms,
            now_ms=now,
            segments=live_segments(now, row.segments, row.unsynced, live.segments),
            unsynced=live_segments(now, row.unsynced),
            counters=counters,
            linked=dict(sorted(row.associations.items())),
        )


# --- row decoding -------------------------------------------------------------------------------


def _is_profile(cells: Mapping[bytes, bytes] | None) -> TypeGuard[Mapping[bytes, bytes]]:
    """A ``p|`` row with cells; one without ``s:type`` holds only ``u:`` cells the real-time feed
    wrote before any compaction saw the id, and reads as a profile of its own."""
    return cells is not None and bool(cells) and cells.get(TYPE, TYPE_PROFILE) == TYPE_PROFILE


def _decoded(key: bytes, cells: Mapping[bytes, bytes]) -> ProfileRow:
    """``decode_profile`` of a profile row, also of a feed-only one (no ``s:type``)."""
    try:
        return decode_profile(key, {TYPE: TYPE_PROFILE, **cells})
    except _DECODE_ERRORS as exc:
        raise CorruptRow(f"{key!r}: {exc}") from None


def _live(key: bytes, row: ProfileRow) -> LiveState:
    """What the row's live cells add to its daily state."""
    try:
        return live_state(row.live, row.as_of_ms)
    except LiveCellError as exc:
        raise CorruptRow(f"{key!r}: {exc}") from None


def _live_row_segments(key: bytes, cells: Mapping[bytes, bytes], now_ms: int) -> dict[str, int]:
    row = _decoded(key, cells)
    return live_segments(now_ms, row.segments, row.unsynced, _live(key, row).segments)


def _lookup_target(key: bytes, cells: Mapping[bytes, bytes] | None) -> str | None:
    if not cells or cells.get(TYPE) != TYPE_LOOKUP or not cells.get(LOOKUP_PROFILE):
        return None
    try:
        return cells[LOOKUP_PROFILE].decode()
    except UnicodeDecodeError as exc:
        raise CorruptRow(f"{key!r}: {exc}") from None


def _master_of(key: bytes, cells: Mapping[bytes, bytes] | None) -> str | None:
    """The row's master (itself on a master, whose ``s:master`` is absent); None: no profile."""
    if not _is_profile(cells):
        return None
    try:
        return cells[MASTER].decode() if MASTER in cells else profile_id_of(key)
    except UnicodeDecodeError as exc:
        raise CorruptRow(f"{key!r}: {exc}") from None


def _edge(key: bytes, cells: Mapping[bytes, bytes] | None) -> Edge | None:
    if not cells or cells.get(TYPE) != TYPE_EDGE:
        return None
    try:
        rules = cells.get(EDGE_RULES, b"").decode()
        return Edge(
            weight=float(cells[EDGE_WEIGHT]),
            rules=tuple(rule for rule in rules.split(",") if rule),
        )
    except _DECODE_ERRORS as exc:
        raise CorruptRow(f"{key!r}: {exc}") from None


# --- input checks -------------------------------------------------------------------------------


def _check_id(name: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidRequest(name, "must be a non-empty string")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError:
        raise InvalidRequest(name, "not valid Unicode (unpaired surrogate)") from None
    if size > MAX_ID_BYTES:
        raise InvalidRequest(name, f"must be at most {MAX_ID_BYTES} bytes of UTF-8, got {size}")
    return value


def check_optional_id(name: str, value: object) -> None:
    if value is not None:
        _check_id(name, value)


def _check_ids(ids: object) -> list[str]:
    if isinstance(ids, str | bytes) or not isinstance(ids, Sequence):
        raise InvalidRequest("ids", "must be a list of ids")
    if not 1 <= len(ids) <= MAX_IDS:
        raise InvalidRequest("ids", f"must hold 1 to {MAX_IDS} ids, got {len(ids)}")
    for i, value in enumerate(ids):
        _check_id(f"ids[{i}]", value)
    return list(dict.fromkeys(ids))


def check_count(name: str, value: object, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidRequest(name, "must be an integer")
    if value < low or (high is not None and value > high):
        bound = f"at least {low}" if high is None else f"between {low} and {high}"
        raise InvalidRequest(name, f"must be {bound}, got {value}")
    return value


def check_now(now_ms: object) -> int:
    if now_ms is None:
        return current_ms()
    return check_count("now_ms", now_ms, 0, None)
