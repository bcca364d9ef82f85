"""What the live profile tests write and expect: persons as compaction writes them, events of
today, and the counters a set of events must add up to."""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.live_cells import day_end_ms
from profile_store.profiles.rules_in_force import replace_rules_in_force
from profile_store.profiles.table import (
    ProfileRow,
    lookup_cells,
    lookup_key,
    profile_cells,
    profile_key,
)

DAY_MS = 86_400_000
HALF_LIFE_MS = 7 * DAY_MS
RULES = [
    {"segment": "clickers", "event_type": "click", "ttl_days": 7},
    {"segment": "buyers", "app_id": "shop", "event_type": "purchase", "ttl_days": 60},
    {
        "segment": "shoe_lovers",
        "event_type": "view_item",
        "attributes": {"product_type": "shoes"},
        "ttl_days": 14,
    },
]


def lake_with_rules(lake: Path) -> str:
    """``lake`` (made if absent) with ``RULES`` in force, as ``profiles segment-rules set``
    leaves it; its path, for ``--lake``."""
    replace_rules_in_force(LocalLakeStorage(lake), json.dumps(RULES), "RULES")
    return str(lake)


def today() -> str:
    return datetime.now(UTC).date().isoformat()


def yesterday() -> str:
    return (datetime.now(UTC) - timedelta(days=1)).date().isoformat()


def write_person(table, ids: list[str], as_of_ms: int | None = None, **cells) -> None:
    """The rows compaction writes for a person (master: the first id), daily state as of the
    end of yesterday unless told."""
    as_of = day_end_ms(yesterday()) if as_of_ms is None else as_of_ms
    for profile in ids:
        row = ProfileRow(
            profile=profile,
            id_type="cookie",
            master=ids[0],
            first_seen_ms=1_700_000_000_000,
            devices=len(ids),
            as_of_ms=as_of,
            associations={other: "cookie" for other in ids if other != profile},
            **cells,
        )
        table.put(profile_key(profile), profile_cells(row))


def write_lookup(table, key_type: str, key: str, master: str) -> None:
    table.put(lookup_key(key_type, key), lookup_cells(master))


def iso(epoch_ms: int) -> str:
    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def message(
    event_id: str,
    user: str,
    at: int | str,
    event_type: str = "click",
    app_id: str = "shop",
    **extra,
) -> tuple[bytes, bytes]:
    """A keyed message of one valid event of a cookie id, as the collector sends it; ``at`` in
    epoch ms, or the event time as sent."""
    body = {
        "event_id": event_id,
        "app_id": app_id,
        "user_id": user,
        "id_type": "cookie",
        "event_time": at if isinstance(at, str) else iso(at),
        "event_type": event_type,
        **extra,
    }
    return user.encode(), json.dumps(body, separators=(",", ":")).encode()


def recent_ms(seconds_ago: float) -> int:
    """A moment of today, ``seconds_ago`` before now (or the start of today, if earlier)."""
    now = time.time_ns() // 1_000_000
    start_of_today = day_end_ms(today()) - DAY_MS
    return max(start_of_today, now - int(seconds_ago * 1000))


def expected_counter(
    messages: Iterable[tuple[bytes, bytes]], event_type: str, now_ms: int
) -> float:
    """What the events of ``event_type`` among ``messages`` add up to at ``now_ms``: each one
    once, halved every half-life."""
    total = 0.0
    for _key, value in messages:
        body = json.loads(value)
        if body["event_type"] == event_type:
            at = int(datetime.fromisoformat(body["event_time"]).timestamp() * 1000)
            total += math.pow(2.0, -(now_ms - at) / HALF_LIFE_MS)
    return total


def table_opener(connection, name: str) -> Callable[[], contextlib.AbstractContextManager]:
    @contextlib.contextmanager
    def open_table() -> Iterator:
        yield connection.table(name)

    return open_table
