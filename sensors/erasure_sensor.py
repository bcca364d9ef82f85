"""Erasure requests are carried out as soon as they are recorded (``erasure_schedule`` in
``profile_assets/schedules.py`` is the nightly backstop).

The job (``profile_assets/jobs.py``) is named, not imported: the sensors sit below the assets.
"""

import hashlib

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SkipReason, sensor

from profile_store.erasure.requests import pending_requests
from resources.lake import LakeResource
from sensors.interval import sensor_interval_seconds

ERASURE_JOB = "erasure_job"


@sensor(
    job_name=ERASURE_JOB,
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
