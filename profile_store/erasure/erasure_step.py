"""The pending erasure requests carried out together: HBase, the lake, the identity graph and the
sketches.

Each request is resolved on its own (the identity areas as they are now, read once, from the
ids given and the profiles the request planned, within the request's bound); a request refused
(the graph grew past its bound since, a key quarantined since) stays pending with nothing
written, and the others go on. The rest is done once for the whole batch, whatever the number
of requests, and each step recorded in the batch's journal (``batch.py``) as it completes:

1. each person's HBase rows deleted again (a compaction between the request and this run skips
   suppressed profiles, but a row written before the request by a run still going is caught
   here), counted per request;
2. one lake rewrite for the union of the persons (``lake_rewrite``), rows counted per request;
3. one rewrite in HBase of the others of their latest components;
4. one rebuild of each day their events were on (its sketches; the accuracy check's leaf counts
   of the day dropped, counted again from the cleaned events when next read);
5. one major compaction of the ``profiles`` and sketch tables, so that no delete marker,
   overwritten version or pending batch naming them stays in HBase's files;
6. one search of each rebuilt day's sketch rows for all the batch's hashes.

Then each request whose hashes no row retains gets its report and its request file, the last
place holding its ids, is deleted; a request with a retained hash stays pending with the journal
kept for it, so the next run rebuilds its days and searches again. A run that fails anywhere
leaves every unfinished request pending and the journal: the next run resumes the batch.

A major compaction through Thrift is synchronous on this project's gateway (embedded or run as
its own server): when the report is written, the gateway's files hold nothing of the persons.
Apache HBase only queues it (its region servers rewrite the store files in the background): the
report says ``requested``, the retaining search covers what reads return (the newest version;
older ones are never read), and the old store files are gone when the compaction finishes.
Which of the two a server is, it is asked (``hbase.server_kind``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import PurePosixPath

from pyspark.sql import SparkSession

from profile_store.audiences.day_sketches import pairs_manifest
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.erasure.batch import (
    ErasureBatch,
    new_batch_id,
    save_batch,
    unfinished_batches,
)
from profile_store.erasure.lake_rewrite import erase_from_lake, owners_frame, plan_erasure
from profile_store.erasure.profiles_table import delete_person
from profile_store.erasure.report import (
    COMPLETED,
    ERASED,
    NOTHING_FOUND,
    REQUESTED,
    BatchFigures,
    ErasureReport,
    save_report,
)
from profile_store.erasure.requests import ErasureRefused, ErasureRequest, GivenId
from profile_store.erasure.resolution import (
    DEFAULT_WEIGHT_THRESHOLD,
    IdentityGraph,
    Person,
    union,
)
from profile_store.erasure.sketch_retention import id_hashes, retention
from profile_store.hbase.server_kind import is_gateway
from profile_store.hbase.settings import ThriftAddress
from profile_store.lake.layout import AUDIENCE_LEAF_COUNTS, PROFILE_SEGMENTS, day_dir
from profile_store.lake.storage import LakeStorage
from profile_store.profiles.pipeline import CompactionSettings, rewrite_components

RebuildSketches = Callable[[date, str], dict]
"""``rebuild(day, batch id)``: rebuild one sketch day from the cleaned events."""


@dataclass(frozen=True)
class ErasureTargets:
    """Where the step writes: the HBase connection factory, executors' address, settings."""

    connect: Callable[[], AbstractContextManager]
    address: ThriftAddress
    compaction: CompactionSettings
    identity_threshold: float = DEFAULT_WEIGHT_THRESHOLD


@dataclass(frozen=True)
class BatchOutcome:
    """What a run did with one batch: the requests completed, and those left pending."""

    batch_id: str | None
    reports: list[ErasureReport] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # request id -> why; nothing written
    retained: list[str] = field(default_factory=list)  # a rebuilt sketch row holds a hash


def latest_state_day(storage: LakeStorage) -> date | None:
    """The last day compaction folded into the profile state."""
    if not storage.exists(PROFILE_SEGMENTS):
        return None
    folders = {PurePosixPath(f.path).parts[1] for f in storage.list_files(PROFILE_SEGMENTS)}
    days = [date.fromisoformat(f.removeprefix("date=")) for f in folders if f.startswith("date=")]
    return max(days, default=None)


def carry_out_pending(
    spark: SparkSession,
    storage: LakeStorage,
    targets: ErasureTargets,
    requests: list[ErasureRequest],
    rebuild_sketches: RebuildSketches,
) -> list[BatchOutcome]:
    """Resume the batches a failed run left, then carry out the other pending ``requests``
    in one batch."""
    by_id = {request.request_id: request for request in requests}
    outcomes = []
    held: set[str] = set()
    for batch in unfinished_batches(storage):
        held |= batch.persons.keys()
        batch.runs += 1
        save_batch(storage, batch)
        outcomes.append(_carry_out(spark, storage, targets, batch, by_id, rebuild_sketches))
    fresh = [request for request in requests if request.request_id not in held]
    if fresh:
        begun, refused = begin_batch(spark, storage, targets, fresh)
        outcome = BatchOutcome(None, refused=refused)
        if begun is not None:
            outcome = _carry_out(spark, storage, targets, begun, by_id, rebuild_sketches)
            outcome = BatchOutcome(begun.batch_id, outcome.reports, refused, outcome.retained)
        outcomes.append(outcome)
    return outcomes


def begin_batch(
    spark: SparkSession,
    storage: LakeStorage,
    targets: ErasureTargets,
    requests: Iterable[ErasureRequest],
) -> tuple[ErasureBatch | None, dict[str, str]]:
    """Resolve each request, find the days holding the persons and write the batch's journal;
    nothing is removed yet. Returns the batch (None if every request was refused) and the
    refusals."""
    started = time.monotonic()
    graph = IdentityGraph.load(storage, targets.identity_threshold)
    persons: dict[str, Person] = {}
    refused: dict[str, str] = {}
    for request in requests:
        planned = [GivenId(profile) for profile in request.plan.get("profiles", [])]
        try:
            persons[request.request_id] = graph.resolve(
                [*request.ids, *planned], request.max_profiles
            )
        except ErasureRefused as exc:  # the graph grew since: this request stays pending
            refused[request.request_id] = str(exc)
    if not persons:
        return None, refused
    owners = owners_frame(spark, _owned_ids(persons))
    batch = ErasureBatch(
        batch_id=new_batch_id(),
        started_at=datetime.now(UTC).isoformat(timespec="seconds"),
        persons=persons,
        plan=plan_erasure(spark, storage, union(persons.values()), owners),
        size=len(persons),
    )
    batch.steps["resolve"] = {"seconds": round(time.monotonic() - started, 2)}
    save_batch(storage, batch)
    return batch, refused


def _owned_ids(persons: dict[str, Person]) -> dict[str, set[str]]:
    return {rid: set(person.profiles) | person.suppressed_ids for rid, person in persons.items()}


def _step(storage: LakeStorage, batch: ErasureBatch, name: str, work: Callable[[], dict]) -> dict:
    """Run a step unless the journal says it is done; record its figures and seconds."""
    if name not in batch.steps:
        started = time.monotonic()
        figures = work()
        batch.steps[name] = {**figures, "seconds": round(time.monotonic() - started, 2)}
        save_batch(storage, batch)
    return batch.steps[name]


def _carry_out(
    spark: SparkSession,
    storage: LakeStorage,
    targets: ErasureTargets,
    batch: ErasureBatch,
    requests: dict[str, ErasureRequest],
    rebuild_sketches: RebuildSketches,
) -> BatchOutcome:
    person = union(batch.persons.values())

    def delete_rows() -> dict:
        with targets.connect() as connection:
            table = connection.table(targets.compaction.table_name)
            deleted = {rid: delete_person(table, p) for rid, p in batch.persons.items()}
        return {"deleted": {rid: counts.as_dict() for rid, counts in deleted.items()}}

    def rewrite_lake() -> dict:
        owners = owners_frame(spark, _owned_ids(batch.persons))
        plan, threshold = batch.plan, targets.identity_threshold
        return erase_from_lake(spark, storage, person, plan, owners, threshold).as_json()

    def rewrite_others() -> dict:
        state_day = latest_state_day(storage)
        if state_day is None or not person.component_members:
            return {"rows": 0}
        members = sorted(person.component_members)
        address, settings = targets.address, targets.compaction
        return {"rows": rewrite_components(spark, storage, address, state_day, members, settings)}

    sketch_days = _sketch_days(storage, batch)

    def rebuild() -> dict:
        for day in _event_days(batch):
            storage.delete_tree(day_dir(AUDIENCE_LEAF_COUNTS, day))
        for day in sketch_days:
            rebuild_sketches(day, batch.batch_id)
        return {"days": [day.isoformat() for day in sketch_days]}

    def compact() -> dict:
        tables = [targets.compaction.table_name, SKETCH_TABLE]
        with targets.connect() as connection:
            existing = {name.decode() for name in connection.tables()}
            tables = [name for name in tables if name in existing]
            for name in tables:
                connection.compact_table(name, major=True)
        state = COMPLETED if is_gateway(targets.address) else REQUESTED
        return {"tables": tables, "state": state}

    hbase = _step(storage, batch, "hbase", delete_rows)
    lake = _step(storage, batch, "lake", rewrite_lake)
    others = _step(storage, batch, "components", rewrite_others)
    rebuilt = _step(storage, batch, "sketches", rebuild)
    compaction = _step(storage, batch, "compaction", compact)

    started = time.monotonic()
    hashes = {rid: id_hashes(p.profiles) for rid, p in batch.persons.items()}
    every_hash = set().union(*hashes.values())
    checked = retaining = 0
    found: set[bytes] = set()
    for day in sketch_days:
        with targets.connect() as connection:
            searched = retention(connection.table(SKETCH_TABLE), storage, day, every_hash)
        checked += searched.rows_checked
        retaining += searched.rows_retaining
        found |= searched.found
    seconds = {name: step["seconds"] for name, step in batch.steps.items()}
    seconds["retention"] = round(time.monotonic() - started, 2)
    figures = BatchFigures(
        batch_id=batch.batch_id,
        requests=batch.size,
        started_at=batch.started_at,
        runs=batch.runs,
        rows_removed=lake["rows_removed"],
        partitions_rewritten=lake["partitions_rewritten"],
        files_rewritten=lake["files_rewritten"],
        component_days_recomputed=lake["component_days_recomputed"],
        hbase_rows_rewritten=others["rows"],
        sketch_days_rebuilt=rebuilt["days"],
        sketch_rows_checked=checked,
        sketch_rows_retaining=retaining,
        hbase_major_compaction={"tables": compaction["tables"], "state": compaction["state"]},
        seconds_by_step=seconds,
        seconds=round(sum(seconds.values()), 1),
    )
    retained = sorted(rid for rid, mine in hashes.items() if mine & found)
    reports = []
    for rid, person_of_request in sorted(batch.persons.items()):
        request = requests.get(rid)
        if request is None or rid in retained:  # done by an earlier run, or not yet
            continue
        report = _report(request, person_of_request, hbase, lake, batch, figures)
        save_report(storage, report)
        storage.delete_tree(request.path)
        reports.append(report)
    _finish(storage, batch, retained)
    return BatchOutcome(batch.batch_id, reports, retained=retained)


def _event_days(batch: ErasureBatch) -> list[date]:
    """The days the batch's persons had events on."""
    return sorted(
        {day for rid in batch.persons for day in batch.plan.event_days_by_request.get(rid, [])}
    )


def _sketch_days(storage: LakeStorage, batch: ErasureBatch) -> list[date]:
    """The days the batch's persons had events on, among those whose sketches were built (a
    later day's build reads the cleaned events anyway)."""
    return [day for day in _event_days(batch) if storage.exists(pairs_manifest(day))]


def _report(
    request: ErasureRequest,
    person: Person,
    hbase: dict,
    lake: dict,
    batch: ErasureBatch,
    figures: BatchFigures,
) -> ErasureReport:
    rid = request.request_id
    deleted = hbase["deleted"].get(rid, {})
    removed = lake["rows_by_request"].get(rid, {})
    days = batch.plan.event_days_by_request.get(rid, [])
    rebuilt_days = set(figures.sketch_days_rebuilt)
    removed_anything = any(removed.values()) or any(deleted.values())
    return ErasureReport(
        request_id=rid,
        requested_at=request.requested_at,
        completed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        outcome=ERASED if person.known or removed_anything else NOTHING_FOUND,
        ids_given=len(request.ids),
        profiles_resolved=len(person.profiles) if person.known else 0,
        keys_resolved=len(person.keys),
        batch=figures,
        immediate=dict(request.immediate),
        hbase_rows_deleted=deleted,
        rows_removed=dict(sorted(removed.items())),
        sketch_days_rebuilt=[d.isoformat() for d in days if d.isoformat() in rebuilt_days],
    )


def _finish(storage: LakeStorage, batch: ErasureBatch, retained: list[str]) -> None:
    """The journal goes with the batch's last report; with requests still retained, it stays
    for them, their sketch days to be rebuilt, compacted and searched again."""
    if not retained:
        storage.delete_tree(batch.path)
        return
    batch.persons = {rid: batch.persons[rid] for rid in retained}
    for name in ("sketches", "compaction"):
        batch.steps.pop(name, None)
    save_batch(storage, batch)
