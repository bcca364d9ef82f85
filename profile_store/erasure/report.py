"""The audit report of an erasure request: what was removed where, and when; no personal data.

Counts, partition names (``area/date=D``), days and the request's id and times only: the ids
given and resolved are not in it (the request file that held them is deleted when the report
is written). Kept in the lake (``erasure/reports/<request id>.json``) and as the ``erasure``
asset's metadata.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from profile_store.lake.storage import LakeStorage

REPORTS = "erasure/reports"
ERASED = "erased"
NOTHING_FOUND = "nothing found"


@dataclass(frozen=True)
class ErasureReport:
    request_id: str
    requested_at: str
    completed_at: str
    outcome: str  # ERASED | NOTHING_FOUND
    ids_given: int
    profiles_resolved: int
    keys_resolved: int
    immediate: dict[str, int | bool] = field(default_factory=dict)
    hbase_rows_deleted: dict[str, int] = field(default_factory=dict)
    rows_removed: dict[str, int] = field(default_factory=dict)
    partitions_rewritten: list[str] = field(default_factory=list)
    files_rewritten: int = 0
    component_days_recomputed: list[str] = field(default_factory=list)
    hbase_rows_rewritten: int = 0
    sketch_days_rebuilt: list[str] = field(default_factory=list)
    sketch_rows_checked: int = 0
    sketch_rows_retaining: int = 0  # searched after the major compaction
    # The tables major-compacted after the rebuild; "completed" (the embedded gateway: its
    # files hold nothing of the person) or "requested" (Apache HBase compacts in the background)
    hbase_major_compaction: dict = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def path(self) -> str:
        return f"{REPORTS}/{self.request_id}.json"

    def to_json(self) -> bytes:
        return json.dumps(asdict(self), indent=1, sort_keys=True).encode()


def save_report(storage: LakeStorage, report: ErasureReport) -> None:
    storage.write_bytes(report.path, report.to_json())


def load_report(storage: LakeStorage, request_id: str) -> dict | None:
    path = f"{REPORTS}/{request_id}.json"
    return json.loads(storage.read_bytes(path)) if storage.exists(path) else None
