"""What the real-time tests send and read back: events and landing files."""

from __future__ import annotations

import gzip
import json
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime

from profile_store.lake.landing_watch import is_landing_data
from profile_store.lake.layout import LANDING
from profile_store.lake.storage import LakeStorage


def event_line(event_id: str, event_time: str, user: str = "u1", event_type: str = "open") -> bytes:
    """One valid landing line."""
    return json.dumps(
        {
            "event_id": event_id,
            "app_id": "com.example.shop",
            "user_id": user,
            "id_type": "cookie",
            "event_time": event_time,
            "event_type": event_type,
        },
        separators=(",", ":"),
    ).encode()


def landed(storage: LakeStorage) -> dict[str, list[bytes]]:
    """Every line of every landing data file, by day."""
    by_day: dict[str, list[bytes]] = defaultdict(list)
    for file in storage.list_files(LANDING):
        if is_landing_data(file.path):
            day = file.path.split("/")[1].removeprefix("date=")
            by_day[day].extend(gzip.decompress(storage.read_bytes(file.path)).splitlines())
    return dict(by_day)


def data_files(storage: LakeStorage) -> list[str]:
    return [f.path for f in storage.list_files(LANDING) if is_landing_data(f.path)]


def utc_day(line: bytes) -> str | None:
    """The UTC day of a valid event's time, by Python's own ISO-8601 parser."""
    try:
        event = json.loads(line)
        moment = datetime.fromisoformat(event["event_time"].replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return moment.astimezone(UTC).date().isoformat()


def drive(step: Callable[[], object], until: Callable[[], bool], timeout: float = 180.0) -> None:
    """Call ``step`` until ``until()`` holds; a generous bound only against hanging forever."""
    deadline = time.monotonic() + timeout
    while not until():
        assert time.monotonic() < deadline, "the condition did not hold within the bound"
        step()
