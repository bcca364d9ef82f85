"""Observing the event stream: a sensor that reads Kafka's consumer lag and reports it.

Every ``minimum_interval_seconds`` it records an observation of ``event_stream`` and the result
of its lag check (``profile_assets/event_stream``); it launches no run. ``PROFILES_STREAM_MAX_LAG``
is read when the code location loads, so a bad value stops the load with its name.
"""

from __future__ import annotations

from dagster import (
    AssetCheckEvaluation,
    AssetObservation,
    DefaultSensorStatus,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from profile_assets.event_stream import (
    EVENT_STREAM,
    LAG_CHECK,
    lag_check_result,
    observation_metadata,
)
from profile_store.realtime.stream_lag import StreamObservation, max_lag_from_env, observe_stream

OBSERVE_INTERVAL_S = 60


def stream_events(
    observation: StreamObservation, max_lag: int
) -> list[AssetObservation | AssetCheckEvaluation]:
    """The observation, and the check's evaluation when the lag was measured."""
    events: list[AssetObservation | AssetCheckEvaluation] = [
        AssetObservation(asset_key=EVENT_STREAM, metadata=observation_metadata(observation))
    ]
    if observation.configured and observation.error is None:
        result = lag_check_result(observation, max_lag)
        events.append(
            AssetCheckEvaluation(
                asset_key=result.asset_key,
                check_name=LAG_CHECK,
                passed=result.passed,
                metadata=result.metadata,
                description=result.description,
            )
        )
    return events


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
