"""A small, known ``profiles`` table in a real embedded HBase gateway, for the read tests.

Rows are written with the table contract's own encoders (``profile_cells``, ``edge_cells``,
``lookup_cells``), as compaction writes them; ``NOW`` is the wall clock at import (whole
seconds), so the HTTP service and the CLI, which read at the real time, see the same segments
live and expired as the tests that pass ``now_ms=NOW``.

| person | ids (master first) | ``g:`` segments on every id (expiry from NOW) |
| --- | --- | --- |
| A | cookie-a1, idfa-a2, gaid-a3 | sports +10 d, travel +2 d, lapsed -1 d, ends-now +0 |
| B | cookie-b1, gaid-b2 | news +1 d, old-news -3 d |
| C | cookie-c1, cookie-c2, cookie-c3 | none; ``s:devices`` 7, ``a:`` capped at 2 |

idfa-a2 also holds unsynced cells: u:autos +5 d, u:travel +9 d, u:stale -1 h.
Person A's counters: purchase 8.0 two half-lives (days) ago, page_view 3.0 now (half-life 1 h).
Edges: cookie-a1-idfa-a2 (0.9, member_id), cookie-a1-gaid-a3 (0.6, alt_id), cookie-b1-gaid-b2.
Lookups: email_sha256 sha256("ann@example.com") -> cookie-a1, member_id m-b -> cookie-b1, and
a stale email_sha256 whose master row is gone. Also ``cookie-new`` (only a ``u:`` cell, as the
real-time feed writes before any compaction) and ``idfa-broken`` (a ``g:`` value that is no
expiry).
"""

from __future__ import annotations

import hashlib
import time

import happybase

from profile_store.profiles.table import (
    PROFILE_TABLE,
    SEGMENTS,
    TYPE,
    TYPE_PROFILE,
    UNSYNCED,
    ProfileRow,
    column,
    edge_cells,
    edge_key,
    encode_ms,
    ensure_table,
    lookup_cells,
    lookup_key,
    profile_cells,
    profile_key,
)

SECOND = 1000
HOUR = 3_600_000
DAY = 86_400_000
NOW = time.time_ns() // 1_000_000 // SECOND * SECOND

A1, A2, A3 = "cookie-a1", "idfa-a2", "gaid-a3"
B1, B2 = "cookie-b1", "gaid-b2"
C1, C2, C3 = "cookie-c1", "cookie-c2", "cookie-c3"
FEED_ONLY = "cookie-new"
BROKEN = "idfa-broken"
MASTERS = [A1, B1, C1, BROKEN]  # row-key order; idfa-broken is a person of its own
PERSON_A, PERSON_B, PERSON_C = [A1, A2, A3], [B1, B2], [C1, C2, C3]
ID_TYPES = {A1: "cookie", A2: "idfa", A3: "gaid", B1: "cookie", B2: "gaid"}
ID_TYPES.update({C1: "cookie", C2: "cookie", C3: "cookie"})

ANN_EMAIL = hashlib.sha256(b"ann@example.com").hexdigest()
STALE_EMAIL = hashlib.sha256(b"gone@example.com").hexdigest()
MEMBER_B = "m-b"

SEGMENTS_A = {
    "sports": NOW + 10 * DAY,
    "travel": NOW + 2 * DAY,
    "lapsed": NOW - DAY,
    "ends-now": NOW,
}
LIVE_A = {"sports": NOW + 10 * DAY, "travel": NOW + 2 * DAY}
UNSYNCED_A2 = {"autos": NOW + 5 * DAY, "travel": NOW + 9 * DAY, "stale": NOW - HOUR}
LIVE_A2 = {"autos": NOW + 5 * DAY, "sports": NOW + 10 * DAY, "travel": NOW + 9 * DAY}
SEGMENTS_B = {"news": NOW + DAY, "old-news": NOW - 3 * DAY}
LIVE_B = {"news": NOW + DAY}
COUNTERS_A = {"purchase": (8.0, NOW - 2 * DAY, DAY), "page_view": (3.0, NOW, HOUR)}
FEED_SEGMENTS = {"fresh": NOW + DAY}


def person_rows(
    ids: list[str],
    segments: dict[str, int],
    counters: dict[str, tuple[float, int, int]] | None = None,
    devices: int | None = None,
    cap: int | None = None,
) -> list[ProfileRow]:
    """One row per id of a person, master first, as compaction writes them."""
    rows = []
    for position, profile in enumerate(ids):
        others = [other for other in ids if other != profile][:cap]
        rows.append(
            ProfileRow(
                profile=profile,
                id_type=ID_TYPES[profile],
                master=ids[0],
                first_seen_ms=NOW - (30 - position) * DAY,
                devices=devices or len(ids),
                as_of_ms=NOW - HOUR,
                segments=segments,
                counters=counters or {},
                associations={other: ID_TYPES[other] for other in others},
            )
        )
    return rows


def expiry_cells(family: bytes, expiries: dict[str, int]) -> dict[bytes, bytes]:
    return {column(family, segment): encode_ms(expiry) for segment, expiry in expiries.items()}


def write_profiles(table: happybase.Table) -> None:
    """The data set of the module docstring."""
    rows = [
        *person_rows(PERSON_A, SEGMENTS_A, COUNTERS_A),
        *person_rows(PERSON_B, SEGMENTS_B),
        *person_rows(PERSON_C, {}, devices=7, cap=2),
    ]
    with table.batch() as batch:
        for row in rows:
            batch.put(profile_key(row.profile), profile_cells(row))
        batch.put(profile_key(A2), expiry_cells(UNSYNCED, UNSYNCED_A2))
        batch.put(profile_key(FEED_ONLY), expiry_cells(UNSYNCED, FEED_SEGMENTS))
        broken = ProfileRow(BROKEN, "idfa", BROKEN, NOW - DAY, 1, NOW - HOUR)
        batch.put(profile_key(BROKEN), {**profile_cells(broken), column(SEGMENTS, "x"): b"soon"})
        batch.put(edge_key(A2, A1), edge_cells(0.9, ["member_id"], NOW - 20 * DAY))
        batch.put(edge_key(A1, A3), edge_cells(0.6, ["alt_id"], NOW - 20 * DAY))
        batch.put(edge_key(B1, B2), edge_cells(1.0, ["member_id"], NOW - 20 * DAY))
        batch.put(lookup_key("email_sha256", ANN_EMAIL), lookup_cells(A1))
        batch.put(lookup_key("member_id", MEMBER_B), lookup_cells(B1))
        batch.put(lookup_key("email_sha256", STALE_EMAIL), lookup_cells("cookie-gone"))


def profile_with_segments(
    table: happybase.Table, profile: str, segments: dict[str, int], unsynced: dict[str, int]
) -> None:
    """A bare profile row with ``g:`` and ``u:`` cells (the purge reads nothing else)."""
    cells = {TYPE: TYPE_PROFILE, **expiry_cells(SEGMENTS, segments)}
    table.put(profile_key(profile), {**cells, **expiry_cells(UNSYNCED, unsynced)})


def write_profile_table(connection: happybase.Connection) -> None:
    """Create the ``profiles`` table and write the data set into it."""
    ensure_table(connection)
    write_profiles(connection.table(PROFILE_TABLE))
