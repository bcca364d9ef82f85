"""Observing the event stream: a sensor that reads Kafka's consumer lag and reports it.

Every ``minimum_interval_seconds`` it records an observation of ``event_stream`` and the result
of its lag check (``profile_assets/event_stream_asset``), with the reports of the stream jobs whose
listeners ``PROFILES_STREAM_METRICS_URLS`` names; it launches no run. ``PROFILES_STREAM_MAX_LAG``
is read when the code location loads, so a bad value stops the load with its name.
"""

from __future__ import annotations

from dagster import DefaultSensorStatus, SensorEvaluationContext, SensorResult, sensor

from profile_assets.event_stream_asset import stream_events
from profile_store.realtime.stream_lag import max_lag_from_env, observe_stream

OBSERVE_INTERVAL_S = 60


def build_event_stream_sensor(max_lag: int):
    @sensor(
        name="event_stream_sensor",
        minimum_interval_seconds=OBSERVE_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Observes the Kafka events topic: consumer lag per group and the lag check.",
    )
    def event_stream_sensor(context: SensorEvaluationContext) -> SensorResult:
        return SensorResult(asset_events=stream_events(observe_stream(), max_lag))

    return event_stream_sensor


event_stream_sensor = build_event_stream_sensor(max_lag_from_env())
