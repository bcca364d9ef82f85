"""Erasure requests are carried out as soon as they are recorded, and every night as a backstop."""

import hashlib

from dagster import (
    AssetSelection,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    RunRequest,
    ScheduleDefinition,
    SensorEvaluationContext,
    SkipReason,
    define_asset_job,
    sensor,
)

from profile_store.erasure.requests import pending_requests
from resources.lake import LakeResource
from sensors.interval import sensor_interval_seconds

erasure_job = define_asset_job(
    "erasure_job",
    selection=AssetSelection.assets("erasure"),
    description="Carry out every pending erasure request (profiles forget, the admin API).",
)


@sensor(
    job=erasure_job,
    minimum_interval_seconds=sensor_interval_seconds(),
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Watches erasure/requests/ in the lake: pending requests get one run of erasure_job "
        "(the run key names the requests, so the same requests never trigger twice)."
    ),
)
def erasure_sensor(context: SensorEvaluationContext, lake: LakeResource):
    requests = pending_requests(lake.storage())
    if not requests:
        yield SkipReason("no pending erasure requests")
        return
    ids = ",".join(r.request_id for r in requests)
    yield RunRequest(
        run_key=hashlib.sha1(ids.encode()).hexdigest()[:16],
        tags={"erasure/requests": str(len(requests))},
    )


erasure_schedule = ScheduleDefinition(
    job=erasure_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
    description="Every day at 02:00 UTC, before the daily schedule: any request still pending.",
)
