"""The jobs' schedules, stopped by default: backstops for the sensors that launch the same jobs."""

from dagster import DefaultScheduleStatus, ScheduleDefinition, build_schedule_from_partitioned_job

from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS
from profile_assets.jobs import daily_pipeline, erasure_job

daily_schedule = build_schedule_from_partitioned_job(
    daily_pipeline,
    hour_of_day=3,
    tags=WHOLE_DAY_RUN_TAGS,
    default_status=DefaultScheduleStatus.STOPPED,
    description=(
        "Yesterday's partition every day at 03:00 UTC, for lakes whose writers do not drop "
        "_SUCCESS markers (the landing sensor covers those that do)."
    ),
)

erasure_schedule = ScheduleDefinition(
    job=erasure_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
    description="Every day at 02:00 UTC, before the daily schedule: any request still pending.",
)
