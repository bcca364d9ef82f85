"""The event stream as Dagster sees it: an external asset, observed, with a lag check.

Kafka and its consumers (``profiles stream lake-sink``, the live profiles) are long-running
services, not runs, so the stream is an external asset (``event_stream``) that no run
materializes: ``sensors/event_stream_sensor`` observes it (each consumer group's lag and newest
processed event time, and what each stream job says of itself on its metrics listener) and
reports the lag check with each observation; the check can also be run by hand. A process that
runs the stream where no daemon ticks the sensor (the demo) records the same observations with
``record_stream_health``. Without Kafka configured the observation says so and the code
location loads.
"""

from __future__ import annotations

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetObservation,
    AssetSpec,
    DagsterInstance,
    MetadataValue,
    asset_check,
)

from profile_store.realtime.consumer_probe import ConsumerReport
from profile_store.realtime.stream_lag import StreamObservation, max_lag_from_env

EVENT_STREAM = "event_stream"
LAG_CHECK = "consumer_lag_within_limit"

event_stream = AssetSpec(
    EVENT_STREAM,
    group_name="realtime",
    kinds={"kafka"},
    description=(
        "The Kafka events topic the collector writes and the lake sink and live profiles read. "
        "Observed by the event_stream_sensor: consumer lag per group, newest processed event."
    ),
)


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
                asset_key=result.asset_key,
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


@asset_check(
    asset=EVENT_STREAM,
    name=LAG_CHECK,
    description="Every consumer group of the events topic is at most PROFILES_STREAM_MAX_LAG "
    "messages behind the end of the log (groups that never committed are not counted).",
)
def consumer_lag_within_limit() -> AssetCheckResult:
    from profile_store.realtime.stream_lag import observe_stream

    return lag_check_result(observe_stream(), max_lag_from_env())
