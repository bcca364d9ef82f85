"""One erasure request carried out: HBase, the lake, the identity graph and the sketches.

In this order: the person is resolved again (the identity areas as they are now, before their
rows go, from the ids given and the profiles the request planned, within the request's bound)
and their HBase rows deleted again (a compaction between the request and this step skips
suppressed profiles, but a row written before the request by a run still going is caught
here); the lake is rewritten (``lake_rewrite``); the others of their latest components get
their HBase rows rewritten from the rewritten state; the days they appeared on get their
sketches rebuilt; the ``profiles`` and sketch tables are major-compacted, so that no delete
marker, overwritten version or pending batch naming them stays in HBase's files; then the
rebuilt sketch rows are searched for their hashes; the report is written and the request file,
the last place holding their ids, deleted.

A major compaction through Thrift is synchronous on the embedded gateway: when the report is
written, the gateway's files hold nothing of the person. Apache HBase only queues it (its
region servers rewrite the store files in the background): the report says ``requested``, the
retaining search covers what reads return (the newest version; older ones are never read), and
the old store files are gone when the compaction finishes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import PurePosixPath

from pyspark.sql import SparkSession

from profile_store.audiences.day_sketches import pairs_manifest
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.erasure.lake_rewrite import erase_from_lake
from profile_store.erasure.profiles_table import delete_person
from profile_store.erasure.report import ERASED, NOTHING_FOUND, ErasureReport, save_report
from profile_store.erasure.requests import ErasureRefused, ErasureRequest, GivenId
from profile_store.erasure.resolution import DEFAULT_WEIGHT_THRESHOLD, resolve
from profile_store.erasure.sketch_retention import id_hashes, retention
from profile_store.hbase.settings import ThriftAddress
from profile_store.lake.layout import PROFILE_SEGMENTS
from profile_store.lake.storage import LakeStorage
from profile_store.profiles.pipeline import CompactionSettings, rewrite_components


@dataclass(frozen=True)
class ErasureTargets:
    """Where the step writes: the HBase connection factory, executors' address, settings."""

    connect: Callable[[], AbstractContextManager]
    address: ThriftAddress
    compaction: CompactionSettings
    identity_threshold: float = DEFAULT_WEIGHT_THRESHOLD
    major_compaction_waits: bool = True  # the embedded gateway's; Apache HBase only queues it


def latest_state_day(storage: LakeStorage) -> date | None:
    """The last day compaction folded into the profile state."""
    if not storage.exists(PROFILE_SEGMENTS):
        return None
    folders = {PurePosixPath(f.path).parts[1] for f in storage.list_files(PROFILE_SEGMENTS)}
    days = [date.fromisoformat(f.removeprefix("date=")) for f in folders if f.startswith("date=")]
    return max(days, default=None)


def carry_out(
    spark: SparkSession,
    storage: LakeStorage,
    targets: ErasureTargets,
    request: ErasureRequest,
    rebuild_sketches: Callable[[date], dict],
) -> ErasureReport:
    """Erase the request's person everywhere; ``rebuild_sketches(day)`` rebuilds one day."""
    started = time.monotonic()
    planned = [GivenId(profile) for profile in request.plan.get("profiles", [])]
    try:
        person = resolve(
            storage, [*request.ids, *planned], request.max_profiles, targets.identity_threshold
        )
    except ErasureRefused as exc:  # the graph grew since: the request stays pending
        raise ErasureRefused(f"erasure request {request.request_id}: {exc}") from None
    with targets.connect() as connection:
        deleted = delete_person(connection.table(targets.compaction.table_name), person)
    lake = erase_from_lake(spark, storage, person, targets.identity_threshold)
    rewritten = 0
    state_day = latest_state_day(storage)
    if state_day is not None and person.component_members:
        rewritten = rewrite_components(
            spark,
            storage,
            targets.address,
            state_day,
            sorted(person.component_members),
            targets.compaction,
        )
    hashes = id_hashes(person.profiles)
    checked = retaining = 0
    # Only days whose sketches were built: a later day's build reads the cleaned events anyway.
    sketch_days = [day for day in lake.event_days if storage.exists(pairs_manifest(day))]
    for day in sketch_days:
        rebuild_sketches(day)
    compacted = [targets.compaction.table_name, SKETCH_TABLE]
    with targets.connect() as connection:
        existing = {name.decode() for name in connection.tables()}
        compacted = [name for name in compacted if name in existing]
        for name in compacted:
            connection.compact_table(name, major=True)
    for day in sketch_days:
        with targets.connect() as connection:
            found = retention(connection.table(SKETCH_TABLE), storage, day, hashes)
        checked += found.rows_checked
        retaining += found.rows_retaining
    removed_anything = any(lake.rows_removed.values()) or any(deleted.as_dict().values())
    report = ErasureReport(
        request_id=request.request_id,
        requested_at=request.requested_at,
        completed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        outcome=ERASED if person.known or removed_anything else NOTHING_FOUND,
        ids_given=len(request.ids),
        profiles_resolved=len(person.profiles) if person.known else 0,
        keys_resolved=len(person.keys),
        immediate=dict(request.immediate),
        hbase_rows_deleted=deleted.as_dict(),
        rows_removed=dict(sorted(lake.rows_removed.items())),
        partitions_rewritten=sorted(set(lake.partitions)),
        files_rewritten=lake.files_rewritten,
        component_days_recomputed=[d.isoformat() for d in lake.component_days],
        hbase_rows_rewritten=rewritten,
        sketch_days_rebuilt=[d.isoformat() for d in sketch_days],
        sketch_rows_checked=checked,
        sketch_rows_retaining=retaining,
        hbase_major_compaction={
            "tables": compacted,
            "state": "completed" if targets.major_compaction_waits else "requested",
        },
        seconds=round(time.monotonic() - started, 1),
    )
    save_report(storage, report)
    if retaining == 0:  # otherwise the request stays pending: the next run tries again
        storage.delete_tree(request.path)
    return report
