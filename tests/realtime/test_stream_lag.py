"""The event stream seen from Dagster, against the real broker: a consumer group with a backlog,
its lag and newest processed event in the observation, and the lag check on both sides of its
limit."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, TopicPartition
from dagster import AssetCheckEvaluation, AssetObservation, build_sensor_context
from landing_files import event_line

from profile_store.event_bus.producer import EventProducer
from profile_store.realtime.event_keys import keyed_lines
from profile_store.realtime.stream_lag import max_lag_from_env, observe_stream
from sensors.event_stream import build_event_stream_sensor, stream_events

GROUP = "lag-test-group"


@pytest.fixture
def backlog(bus):
    """30 events in the topic; the group committed all but 10 of them."""
    lines = [event_line(f"e{i}", f"2026-11-01T10:00:{i:02d}Z", user=f"u{i}") for i in range(30)]
    with EventProducer(bus) as producer:
        producer.send(keyed_lines(lines))
    consumer = Consumer(bus.client_config(**{"group.id": GROUP, "enable.auto.commit": False}))
    try:
        ends = {}
        for partition in range(bus.partitions):
            tp = TopicPartition(bus.topic, partition)
            ends[partition] = consumer.get_watermark_offsets(tp, timeout=30)[1]
        assert sum(ends.values()) == 30
        left = 10
        offsets = []
        for partition, end in ends.items():
            behind = min(left, end)
            left -= behind
            offsets.append(TopicPartition(bus.topic, partition, end - behind))
        consumer.commit(offsets=offsets, asynchronous=False)
    finally:
        consumer.close()
    return {
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
        "PROFILES_KAFKA_TOPIC": bus.topic,
        "PROFILES_STREAM_CONSUMER_GROUPS": f"{GROUP},never-started",
    }


def test_the_observation_holds_each_groups_lag_and_newest_event(backlog):
    observation = observe_stream(backlog)
    lags = {group.group: group for group in observation.groups}
    assert lags[GROUP].started and lags[GROUP].lag == 10
    assert lags[GROUP].newest_event_time is not None
    assert lags[GROUP].newest_event_time.startswith("2026-11-01T10:00:")
    assert not lags["never-started"].started


def test_the_lag_check_fails_past_its_limit(backlog):
    events = stream_events(observe_stream(backlog), max_lag=9)
    check = next(e for e in events if isinstance(e, AssetCheckEvaluation))
    assert not check.passed
    assert f"{GROUP} is 10 messages behind (limit 9)" in check.description


def test_the_lag_check_passes_at_or_under_its_limit(backlog):
    events = stream_events(observe_stream(backlog), max_lag=10)
    check = next(e for e in events if isinstance(e, AssetCheckEvaluation))
    assert check.passed


def test_the_sensor_reports_the_observation_and_the_check(backlog, monkeypatch):
    for name, value in backlog.items():
        monkeypatch.setenv(name, value)
    result = build_event_stream_sensor(max_lag=5)(build_sensor_context())
    observation = next(e for e in result.asset_events if isinstance(e, AssetObservation))
    assert observation.metadata[f"{GROUP} lag"].value == 10
    assert observation.metadata["never-started lag"].text.startswith("not started")
    check = next(e for e in result.asset_events if isinstance(e, AssetCheckEvaluation))
    assert not check.passed


def test_without_kafka_configured_the_observation_says_so_and_no_check_is_reported():
    events = stream_events(observe_stream({}), max_lag=10)
    assert len(events) == 1
    assert events[0].metadata["kafka"].text.startswith("not configured")


def test_an_unreachable_kafka_is_said_in_the_observation(backlog):
    down = {**backlog, "PROFILES_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1"}
    events = stream_events(observe_stream(down, timeout=2), max_lag=10)
    assert events[0].metadata["kafka"].text.startswith("unreachable")


@pytest.mark.parametrize("text", ["-1", "many", "1.5"])
def test_a_bad_max_lag_is_refused_naming_the_variable(text):
    with pytest.raises(ValueError, match="PROFILES_STREAM_MAX_LAG"):
        max_lag_from_env({"PROFILES_STREAM_MAX_LAG": text})
