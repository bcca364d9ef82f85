"""The code location: every asset, check, sensor and resource in one ``Definitions``."""

from __future__ import annotations

from dagster import Definitions, in_process_executor

from profile_assets.activation_assets import audience_activations
from profile_assets.audience_assets import attribute_stats, audience_sketches, trimmed_attributes
from profile_assets.audience_checks import audience_estimation_error
from profile_assets.automation_conditions import with_daily_automation
from profile_assets.compaction_assets import compacted_profiles
from profile_assets.erasure_assets import erasure
from profile_assets.event_stream_asset import consumer_lag_within_limit, event_stream
from profile_assets.identity_assets import identity_components, identity_edges
from profile_assets.jobs import daily_pipeline, erasure_job
from profile_assets.profile_checks import profile_checks
from profile_assets.raw_events import raw_events
from profile_assets.raw_events_checks import raw_events_checks
from profile_assets.schedules import daily_schedule, erasure_schedule
from resources import resources_from_env
from sensors.automation_sensor import automation_sensor
from sensors.erasure_sensor import erasure_sensor
from sensors.event_stream_sensor import event_stream_sensor
from sensors.landing_sensor import landing_sensor

DAILY_ASSETS = [
    raw_events,
    attribute_stats,
    trimmed_attributes,
    audience_sketches,
    audience_activations,
    identity_edges,
    identity_components,
    compacted_profiles,
]

# The assets of one day, with their automation conditions (what `daily_pipeline` runs).
daily_assets = with_daily_automation(DAILY_ASSETS, day_root=raw_events.key)

defs = Definitions(
    assets=[*daily_assets, erasure, event_stream],
    asset_checks=[
        *raw_events_checks,
        audience_estimation_error,
        *profile_checks,
        consumer_lag_within_limit,
    ],
    jobs=[daily_pipeline, erasure_job],
    sensors=[landing_sensor, automation_sensor, erasure_sensor, event_stream_sensor],
    schedules=[daily_schedule, erasure_schedule],
    resources=resources_from_env(),
    # One Spark session per run: steps share it instead of each starting a JVM.
    executor=in_process_executor,
)
