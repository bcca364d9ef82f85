"""How far the stream's consumers are behind: per consumer group, committed offsets against the
log's end, and the newest event time they processed.

The real-time path is long-running processes, not runs, so the orchestrator observes it from
outside: this reads what any Kafka client may read (the groups' committed offsets, the
partitions' high watermarks, the message just below a committed offset) and changes nothing.
A group that never committed is reported as not started, not as lagging the whole topic: a
consumer that is not deployed (the live profiles before their first run) is not late.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
from confluent_kafka import (
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from profile_store.event_bus.settings import EventBusSettings
from profile_store.events.arrow_rules import event_times
from profile_store.realtime.consumer_probe import (
    ConsumerReport,
    metrics_urls_from_env,
    probe_consumer,
)

MAX_LAG_VARIABLE = "PROFILES_STREAM_MAX_LAG"
DEFAULT_MAX_LAG = 100_000
GROUPS_VARIABLE = "PROFILES_STREAM_CONSUMER_GROUPS"
DEFAULT_GROUPS = ("profiles-lake-sink", "profiles-live-profiles")


def max_lag_from_env(env: Mapping[str, str] | None = None) -> int:
    """``PROFILES_STREAM_MAX_LAG``: messages a group may be behind, a whole number >= 0."""
    text = (os.environ if env is None else env).get(MAX_LAG_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_LAG
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{MAX_LAG_VARIABLE}: expected a whole number, got {text!r}") from None
    if value < 0:
        raise ValueError(f"{MAX_LAG_VARIABLE}: must not be negative, got {value}")
    return value


def groups_from_env(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``PROFILES_STREAM_CONSUMER_GROUPS``: comma-separated consumer groups to observe."""
    text = (os.environ if env is None else env).get(GROUPS_VARIABLE, "")
    groups = tuple(name.strip() for name in text.split(",") if name.strip())
    return groups or DEFAULT_GROUPS


@dataclass(frozen=True)
class GroupLag:
    group: str
    started: bool  # the group committed an offset on some partition
    lag: int  # messages behind, summed over the partitions (0 when not started)
    by_partition: dict[int, int] = field(default_factory=dict)
    newest_event_time: str | None = None  # ISO-8601 UTC of the newest processed event


def _newest_time(reader: Consumer, topic: str, committed: dict[int, int]) -> str | None:
    """The newest ``event_time`` among the messages just below each committed offset."""
    texts: list[bytes] = []
    for partition, offset in committed.items():
        if offset <= 0:
            continue
        reader.assign([TopicPartition(topic, partition, offset - 1)])
        message = reader.consume(1, timeout=10)
        payload = message[0].value() if message and message[0].error() is None else None
        if payload is not None:
            try:
                value = json.loads(payload)
            except ValueError:
                continue
            time = value.get("event_time") if isinstance(value, dict) else None
            if isinstance(time, str):
                texts.append(time.encode())
    times = [t for t in event_times(pa.array(texts, pa.binary())).to_pylist() if t is not None]
    return max(times).isoformat().replace("+00:00", "Z") if times else None


def observe_groups(
    settings: EventBusSettings, groups: Sequence[str], timeout: float = 10.0
) -> list[GroupLag]:
    """Each group's lag on the events topic; raises ``KafkaException`` when Kafka cannot be
    read."""
    reader = Consumer(
        settings.client_config(
            **{"group.id": f"profiles-observer-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False}
        )
    )
    try:
        metadata = reader.list_topics(settings.topic, timeout=timeout).topics.get(settings.topic)
        if metadata is not None and metadata.error is not None:
            raise KafkaException(metadata.error)
        if metadata is None:
            missing = KafkaError(KafkaError._UNKNOWN_TOPIC, f"no topic {settings.topic!r}")
            raise KafkaException(missing)
        partitions = [TopicPartition(settings.topic, p) for p in sorted(metadata.partitions)]
        highs = {
            tp.partition: reader.get_watermark_offsets(tp, timeout=timeout)[1] for tp in partitions
        }
        observed = []
        for group in groups:
            member = Consumer(
                settings.client_config(**{"group.id": group, "enable.auto.commit": False})
            )
            try:
                offsets = member.committed(partitions, timeout=timeout)
            finally:
                member.close()
            committed = {
                tp.partition: tp.offset
                for tp in offsets
                if tp.offset != OFFSET_INVALID and tp.offset >= 0
            }
            if not committed:
                observed.append(GroupLag(group, started=False, lag=0))
                continue
            lows = {
                p: reader.get_watermark_offsets(TopicPartition(settings.topic, p), timeout)[0]
                for p in highs
                if p not in committed
            }
            behind = {
                p: max(0, high - committed.get(p, lows.get(p, 0))) for p, high in highs.items()
            }
            observed.append(
                GroupLag(
                    group,
                    started=True,
                    lag=sum(behind.values()),
                    by_partition=behind,
                    newest_event_time=_newest_time(reader, settings.topic, committed),
                )
            )
        return observed
    finally:
        reader.close()


def group_lag(settings: EventBusSettings, group: str) -> int:
    """Messages of the topic ``group`` has not committed yet; before its first commit, none
    (as ``observe_groups`` reports a group that never committed)."""
    (observed,) = observe_groups(settings, [group])
    return observed.lag


@dataclass(frozen=True)
class StreamObservation:
    """What the orchestrator shows of the stream."""

    configured: bool
    topic: str | None = None
    groups: list[GroupLag] = field(default_factory=list)
    error: str | None = None
    consumers: list[ConsumerReport] = field(default_factory=list)  # the jobs' own reports

    def lagging(self, max_lag: int) -> list[GroupLag]:
        return [g for g in self.groups if g.started and g.lag > max_lag]


def observe_stream(
    env: Mapping[str, str] | None = None, timeout: float = 10.0
) -> StreamObservation:
    """The stream as the environment configures it, with the reports of the jobs whose
    listeners ``PROFILES_STREAM_METRICS_URLS`` names; Kafka not configured
    (``PROFILES_KAFKA_BOOTSTRAP_SERVERS`` unset) or unreachable is said, not raised."""
    env = os.environ if env is None else env
    if not env.get("PROFILES_KAFKA_BOOTSTRAP_SERVERS"):
        return StreamObservation(configured=False)
    settings = EventBusSettings.from_env(env)
    consumers = [probe_consumer(url, timeout) for url in metrics_urls_from_env(env)]
    try:
        groups = observe_groups(settings, groups_from_env(env), timeout)
    except KafkaException as error:
        return StreamObservation(
            True, settings.topic, error=str(error.args[0]), consumers=consumers
        )
    return StreamObservation(True, settings.topic, groups, consumers=consumers)
