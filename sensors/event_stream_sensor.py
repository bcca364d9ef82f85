"""Observing the event stream: a sensor that reads Kafka's consumer lag and reports it.

Every ``minimum_interval_seconds`` it records an observation of ``event_stream`` and the result
of its lag check (the asset and the check: ``profile_assets/event_stream_asset.py``), with the
reports of the stream jobs whose listeners ``PROFILES_STREAM_METRICS_URLS`` names; it launches
no run. ``PROFILES_STREAM_MAX_LAG`` is read when the code location loads, so a bad value stops
the load with its name. What an observation reports is here, below the assets: the check run by
hand and a process that records observations without a daemon (the demo) report the same.
"""

from __future__ import annotations

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetKey,
    AssetObservation,
    DagsterInstance,
    DefaultSensorStatus,
    MetadataValue,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from profile_store.realtime.consumer_probe import ConsumerReport
from profile_store.realtime.stream_lag import StreamObservation, max_lag_from_env, observe_stream

EVENT_STREAM = "event_stream"
LAG_CHECK = "consumer_lag_within_limit"
OBSERVE_INTERVAL_S = 60


def consumer_metadata(report: ConsumerReport) -> dict:
    """A stream job's own report: what Kafka cannot say (alive, ready, events committed)."""
    if report.error is not None:
        return {report.name: f"not answering: {report.error}"}
    metadata: dict = {f"{report.name} alive": report.alive, f"{report.name} ready": report.ready}
    if report.events is not None:
        metadata[f"{report.name} events committed"] = MetadataValue.int(report.events)
    return metadata


def observation_metadata(observation: StreamObservation) -> dict:
    """The observation's metadata: one entry per consumer group, the jobs' own reports, plus
    the topic."""
    if not observation.configured:
        return {"kafka": "not configured (set PROFILES_KAFKA_BOOTSTRAP_SERVERS)"}
    metadata: dict = {"topic": observation.topic}
    for report in observation.consumers:
        metadata.update(consumer_metadata(report))
    if observation.error is not None:
        metadata["kafka"] = f"unreachable: {observation.error}"
        return metadata
    for group in observation.groups:
        if not group.started:
            metadata[f"{group.group} lag"] = "not started (no committed offsets)"
            continue
        metadata[f"{group.group} lag"] = MetadataValue.int(group.lag)
        metadata[f"{group.group} lag by partition"] = MetadataValue.json(
            {str(p): lag for p, lag in sorted(group.by_partition.items())}
        )
        if group.newest_event_time is not None:
            metadata[f"{group.group} newest event time"] = group.newest_event_time
    return metadata


def lag_check_result(observation: StreamObservation, max_lag: int) -> AssetCheckResult:
    """Passed when every started group is at most ``max_lag`` messages behind."""
    if not observation.configured or observation.error is not None:
        reason = "Kafka is not configured" if not observation.configured else observation.error
        return AssetCheckResult(
            check_name=LAG_CHECK,
            asset_key=EVENT_STREAM,
            passed=False,
            severity=AssetCheckSeverity.WARN,
            description=f"lag not measured: {reason}",
        )
    lagging = observation.lagging(max_lag)
    lags = {g.group: g.lag for g in observation.groups if g.started}
    description = (
        "; ".join(f"{g.group} is {g.lag:,} messages behind (limit {max_lag:,})" for g in lagging)
        or f"every started group within {max_lag:,} messages"
    )
    return AssetCheckResult(
        check_name=LAG_CHECK,
        asset_key=EVENT_STREAM,
        passed=not lagging,
        description=description,
        metadata={"max_lag": max_lag, **{f"{group} lag": lag for group, lag in lags.items()}},
    )


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
                asset_key=AssetKey(EVENT_STREAM),
                check_name=LAG_CHECK,
                passed=result.passed,
                metadata=result.metadata,
                description=result.description,
            )
        )
    return events


def record_stream_health(
    instance: DagsterInstance, observation: StreamObservation, max_lag: int
) -> None:
    """The observation and its check recorded in ``instance`` outside any run, as the sensor's
    tick records them: for a process that runs the stream where no daemon ticks the sensor."""
    for event in stream_events(observation, max_lag):
        instance.report_runless_asset_event(event)


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
