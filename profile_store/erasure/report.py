"""The audit report of an erasure request: what was removed where, and when; no personal data.

Counts, partition names (``area/date=D``), days and the request's and its batch's ids and
times only: the ids given and resolved are not in it (the request file that held them is
deleted when the report is written). Kept in the lake (``erasure/reports/<request id>.json``)
and as the ``erasure`` asset's metadata.

Requests are carried out in batches (``erasure_step``): one lake rewrite, one sketch rebuild per
day, one major compaction per table for all of a run's requests. So a report states what was
done for its request (the HBase rows its person had, the lake rows naming its person's ids, the
days its person's events were on, each rebuilt once) and, under ``batch``, the steps its batch
shared, with the batch's figures: the partitions rewritten, the rows every request removed
together, the sketch rows searched.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from profile_store.lake.storage import LakeStorage

REPORTS = "erasure/reports"
ERASED = "erased"
NOTHING_FOUND = "nothing found"
COMPLETED = "completed"
REQUESTED = "requested"


@dataclass(frozen=True)
class BatchFigures:
    """The steps a batch's requests shared, done once for all of them."""

    batch_id: str
    requests: int  # carried out together (refused requests are not in a batch)
    started_at: str
    runs: int  # erasure runs that worked on it: more than 1 after a failure (resumed)
    rows_removed: dict[str, int] = field(default_factory=dict)  # every request's, by area
    partitions_rewritten: list[str] = field(default_factory=list)
    files_rewritten: int = 0
    component_days_recomputed: list[str] = field(default_factory=list)
    hbase_rows_rewritten: int = 0  # the others of their components
    sketch_days_rebuilt: list[str] = field(default_factory=list)
    sketch_rows_checked: int = 0  # searched after the major compaction
    sketch_rows_retaining: int = 0
    # The tables major-compacted after the rebuild; "completed" (this project's gateway,
    # embedded or standalone: its files hold nothing of the persons) or "requested" (Apache
    # HBase compacts in the background)
    hbase_major_compaction: dict = field(default_factory=dict)
    seconds_by_step: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass(frozen=True)
class ErasureReport:
    request_id: str
    requested_at: str
    completed_at: str
    outcome: str  # ERASED | NOTHING_FOUND
    ids_given: int
    profiles_resolved: int
    keys_resolved: int
    batch: BatchFigures
    immediate: dict[str, int | bool] = field(default_factory=dict)
    hbase_rows_deleted: dict[str, int] = field(default_factory=dict)  # its person's rows
    # Lake rows naming its person's ids, by area (a row naming two requests' persons counts
    # for both); the batch's total is batch.rows_removed
    rows_removed: dict[str, int] = field(default_factory=dict)
    sketch_days_rebuilt: list[str] = field(default_factory=list)  # its person's event days
    sketch_rows_retaining: int = 0  # rows holding its hashes: 0, or it would still be pending

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
