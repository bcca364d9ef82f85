"""New landing data triggers exactly the affected day partitions; a daily schedule backs it up."""

import json

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SkipReason,
    build_schedule_from_partitioned_job,
    define_asset_job,
    sensor,
)

from profile_assets.partitions import daily_partitions
from profile_store.landing_watch import changed_days, complete_days
from resources.lake import LakeResource

daily_pipeline = define_asset_job(
    "daily_pipeline",
    selection=AssetSelection.all(),
    partitions_def=daily_partitions,
    description="Every daily asset and its checks for one UTC day.",
)


@sensor(
    job=daily_pipeline,
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Watches landing/date=*/ (local directory or S3 prefix). A day whose complete files "
        "(written before its _SUCCESS marker) changed gets one run of daily_pipeline; the run "
        "key is the digest of those files, so the same files never trigger twice."
    ),
)
def landing_sensor(context: SensorEvaluationContext, lake: LakeResource):
    seen: dict[str, str] = json.loads(context.cursor or "{}")
    changed = changed_days(seen, complete_days(lake.storage()))
    if not changed:
        yield SkipReason("no new complete landing files")
        return
    valid = set(daily_partitions.get_partition_keys())
    for day in changed:
        if day.day not in valid:
            context.log.info(f"landing day {day.day} is not a partition yet; will retry")
            continue
        seen[day.day] = day.digest
        yield RunRequest(
            run_key=f"{day.day}:{day.digest}",
            partition_key=day.day,
            tags={"landing/files": str(day.files), "landing/bytes": str(day.bytes)},
        )
    context.update_cursor(json.dumps(seen, sort_keys=True))


daily_schedule = build_schedule_from_partitioned_job(
    daily_pipeline,
    hour_of_day=3,
    default_status=DefaultScheduleStatus.STOPPED,
    description=(
        "Yesterday's partition every day at 03:00 UTC, for lakes whose writers do not drop "
        "_SUCCESS markers (the landing sensor covers those that do)."
    ),
)
