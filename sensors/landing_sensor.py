"""New landing data triggers exactly the affected day partitions of ``daily_pipeline``.

The job (``profile_assets/jobs.py``) is named, not imported: the sensors sit below the assets.
Its runs carry the job's whole-day tags (Dagster merges a job's tags into every run of it), and
the days it has partitions for are read from the job the code location defines.
"""

import json

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from profile_store.erasure.lake_rewrite import rewritten_landing_digest
from profile_store.lake.landing_watch import changed_days, complete_days
from resources.lake import LakeResource
from sensors.interval import sensor_interval_seconds

DAILY_JOB = "daily_pipeline"


def already_ingested(instance: DagsterInstance, day: str, digest: str) -> bool:
    """Did the latest ``raw_events`` of ``day`` read exactly these files, in a run that has not
    failed (succeeded, or still running)?

    Runs the sensor did not launch (the demo, the UI, a backfill) cover a day as well as its own:
    without this the sensor's first tick would run every such day again.
    """
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey("raw_events"), asset_partitions=[day]), limit=1
    ).records
    if not records:
        return False
    materialization = records[0].asset_materialization
    recorded = materialization.metadata.get("landing_digest") if materialization else None
    if recorded is None or recorded.value != digest:
        return False
    run = instance.get_run_by_id(records[0].run_id)
    return run is not None and run.status not in (
        DagsterRunStatus.FAILURE,
        DagsterRunStatus.CANCELED,
    )


RAW_EVENTS = AssetKey("raw_events")
# Queued, or dequeued and not ended: a run of the day that may still write raw_events.
IN_PROGRESS = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
]


def runs_in_progress_by_day(instance: DagsterInstance) -> dict[str, str]:
    """Each day with a run of ``daily_pipeline``, or a run materializing ``raw_events``, that is
    queued or in progress, with that run's id.

    Such a run ingests the day (or is about to): a run of the sensor's own would be a second
    run of the same day, writing the same lake files and tables.
    """
    days = {}
    for run in instance.get_runs(RunsFilter(statuses=IN_PROGRESS)):
        day = run.tags.get("dagster/partition")
        ingests = run.job_name == DAILY_JOB or RAW_EVENTS in (run.asset_selection or ())
        if day and ingests:
            days[day] = run.run_id
    return days


def partition_days(context: SensorEvaluationContext) -> set[str]:
    """The days ``daily_pipeline`` has a partition for, in the definitions being evaluated."""
    if context.repository_def is None:
        raise ValueError("the landing sensor reads its job's partitions from its definitions")
    partitions = context.repository_def.get_job(DAILY_JOB).partitions_def
    if partitions is None:
        raise ValueError(f"{DAILY_JOB} has no partitions: the landing sensor runs it by day")
    return set(partitions.get_partition_keys())


@sensor(
    job_name=DAILY_JOB,
    minimum_interval_seconds=sensor_interval_seconds(),
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Watches landing/date=*/ (local directory or S3 prefix). A day whose complete files "
        "(written before its _SUCCESS marker) changed gets one run of daily_pipeline; the run "
        "key is the digest of those files, so the same files never trigger twice, and a day "
        "whose latest successful run already read them (the demo, a UI run) is skipped. A day "
        "with a run in progress (queued or started) waits for a tick after that run."
    ),
)
def landing_sensor(context: SensorEvaluationContext, lake: LakeResource):
    seen: dict[str, str] = json.loads(context.cursor or "{}")
    storage = lake.storage()
    changed = changed_days(seen, complete_days(storage))
    if not changed:
        yield SkipReason("no new complete landing files")
        return
    valid = partition_days(context)
    in_progress = runs_in_progress_by_day(context.instance)
    covered, waiting = [], []
    requested = False
    for day in changed:
        if day.day not in valid:
            context.log.info(f"landing day {day.day} is not a partition yet; will retry")
            continue
        if day.day in in_progress:
            # Not marked seen: once the run has recorded what it read, a later tick runs the
            # day again only if its files changed meanwhile (already_ingested).
            waiting.append(f"{day.day} (run {in_progress[day.day]})")
            continue
        seen[day.day] = day.digest
        if rewritten_landing_digest(storage, day.day) == day.digest:
            # The erasure step rewrote these files, and the day's events with them.
            context.log.info(f"landing day {day.day} rewritten by an erasure; not run again")
            continue
        if already_ingested(context.instance, day.day, day.digest):
            covered.append(day.day)
            continue
        requested = True
        yield RunRequest(
            run_key=f"{day.day}:{day.digest}",
            partition_key=day.day,
            tags={"landing/files": str(day.files), "landing/bytes": str(day.bytes)},
        )
    if covered:
        context.log.info(f"already ingested by another run, not run again: {', '.join(covered)}")
    context.update_cursor(json.dumps(seen, sort_keys=True))
    if waiting:
        reason = f"a run of the day is in progress, retried next tick: {', '.join(waiting)}"
        context.log.info(reason)
        if not requested:
            yield SkipReason(reason)
