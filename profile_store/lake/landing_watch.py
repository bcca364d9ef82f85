"""Which landing days hold new, complete data: the decision behind the landing sensor.

A day's files are complete when the day's ``_SUCCESS`` marker was written at or after them:
writers put their part files first and (re)write the marker last, so a file newer than the
marker is still being delivered and waits for the next marker. Each day is summarised by a
digest of its complete files (path and size); a day whose digest changed has new data, and the
digest doubles as the run key, so the same files never trigger twice.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass

from profile_store.lake.layout import LANDING, SUCCESS_MARKER
from profile_store.lake.storage import LakeFile, LakeStorage

_DAY_DIR = re.compile(r"^" + LANDING + r"/date=(\d{4}-\d{2}-\d{2})/(.+)$")
LANDING_SUFFIXES = (".jsonl.gz", ".jsonl", ".json.gz", ".json")


def is_landing_data(path: str) -> bool:
    """A landing batch; markers and hidden files (``_*``, ``.*``) are not data."""
    name = path.rsplit("/", 1)[-1]
    return name.endswith(LANDING_SUFFIXES) and not name.startswith(("_", "."))


def landing_digest(files: list[LakeFile]) -> str:
    """What a day's data files are, in 16 hex digits: their paths and sizes.

    The landing sensor keys runs by it, and ``raw_events`` records it for the files it read,
    so that a day whose latest run already read the same files is not run again.
    """
    listing = "\n".join(f"{f.path}\t{f.size}" for f in sorted(files, key=lambda f: f.path))
    return hashlib.sha1(listing.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class LandingDay:
    day: str
    digest: str
    files: int
    bytes: int


def complete_days(storage: LakeStorage) -> dict[str, LandingDay]:
    """Every landing day with a marker, summarised over its complete data files."""
    by_day: dict[str, list[LakeFile]] = defaultdict(list)
    for file in storage.list_files(LANDING):
        match = _DAY_DIR.match(file.path)
        if match:
            by_day[match.group(1)].append(file)
    days = {}
    for day, files in sorted(by_day.items()):
        markers = [f for f in files if f.path.endswith("/" + SUCCESS_MARKER)]
        if not markers:
            continue
        marked_at = max(f.modified_ms for f in markers)
        complete = [f for f in files if is_landing_data(f.path) and f.modified_ms <= marked_at]
        if not complete:
            continue
        days[day] = LandingDay(
            day, landing_digest(complete), len(complete), sum(f.size for f in complete)
        )
    return days


def changed_days(seen: dict[str, str], current: dict[str, LandingDay]) -> list[LandingDay]:
    """Days whose complete files differ from what ``seen`` (day -> digest) recorded."""
    return [entry for day, entry in sorted(current.items()) if seen.get(day) != entry.digest]
