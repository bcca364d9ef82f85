"""The event stream as Dagster sees it: an external asset, observed, with a lag check.

Kafka and its consumers (``profiles stream lake-sink``, the live profiles) are long-running
services, not runs, so the stream is an external asset (``event_stream``) that no run
materializes: ``sensors/event_stream_sensor.py`` observes it (each consumer group's lag and
newest processed event time, and what each stream job says of itself on its metrics listener)
and reports the lag check with each observation; the check can also be run by hand. A process
that runs the stream where no daemon ticks the sensor (the demo) records the same observations
with the sensor's ``record_stream_health``. Without Kafka configured the observation says so
and the code location loads.
"""

from __future__ import annotations

from dagster import AssetCheckResult, AssetSpec, asset_check

from profile_store.realtime.stream_lag import max_lag_from_env
from sensors.event_stream_sensor import EVENT_STREAM, LAG_CHECK, lag_check_result

event_stream = AssetSpec(
    EVENT_STREAM,
    group_name="realtime",
    kinds={"kafka"},
    description=(
        "The Kafka events topic the collector writes and the lake sink and live profiles read. "
        "Observed by the event_stream_sensor: consumer lag per group, newest processed event."
    ),
)


@asset_check(
    asset=EVENT_STREAM,
    name=LAG_CHECK,
    description="Every consumer group of the events topic is at most PROFILES_STREAM_MAX_LAG "
    "messages behind the end of the log (groups that never committed are not counted).",
)
def consumer_lag_within_limit() -> AssetCheckResult:
    from profile_store.realtime.stream_lag import observe_stream

    return lag_check_result(observe_stream(), max_lag_from_env())
