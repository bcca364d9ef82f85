"""The event stream seen from Dagster, against the real broker: a consumer group with a backlog,
its lag and newest processed event in the observation, a stream job's own report beside them,
the lag check on both sides of its limit, and the observations a process running the stream
records into a Dagster instance."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition
from dagster import AssetCheckEvaluation, AssetObservation, DagsterInstance, build_sensor_context
from landing_files import drive, event_line
from stream_observations import lag_check_results, observations
from webserver_wait import free_port

from profile_assets.stream_observer import StreamObserver
from profile_store.event_bus.producer import EventProducer
from profile_store.realtime.consumer_probe import metrics_urls_from_env, probe_consumer
from profile_store.realtime.event_keys import keyed_lines
from profile_store.realtime.sink_metrics import ConsumerHealth, ConsumerMetrics
from profile_store.realtime.stream_lag import max_lag_from_env, observe_stream
from sensors.event_stream_sensor import build_event_stream_sensor, stream_events

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


@pytest.fixture
def job_listener() -> Iterator[tuple[ConsumerMetrics, str]]:
    """A live job's real metrics listener (as ``--metrics-port`` serves it) that has committed
    20 events and waits for its partitions; its address."""
    metrics = ConsumerMetrics("live_profiles", ConsumerHealth(needs_hbase=True))
    metrics.written(20, 0.01)
    server = metrics.serve("127.0.0.1", 0)
    try:
        yield metrics, f"127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_jobs_report_holds_the_events_it_committed_and_why_it_is_not_ready(job_listener):
    _, address = job_listener

    report = probe_consumer(f"http://{address}")

    assert (report.job, report.events, report.alive) == ("live_profiles", 20, "ok")
    assert report.ready == "no: waiting for partitions from the Kafka consumer group"
    assert report.error is None
    assert report.name == f"live_profiles at {address}"


def test_a_jobs_report_says_ready_once_it_holds_partitions_and_hbase_answers(job_listener):
    metrics, address = job_listener
    metrics.health.assigned()
    metrics.health.hbase_answered()

    assert probe_consumer(f"http://{address}").ready == "ok"


def test_a_listener_that_does_not_answer_is_reported_not_raised():
    report = probe_consumer(f"http://127.0.0.1:{free_port()}", timeout=2)

    assert report.error is not None and "refused" in report.error.lower()
    assert report.events is None and report.ready is None


def test_the_jobs_listeners_are_named_by_a_comma_separated_variable():
    env = {"PROFILES_STREAM_METRICS_URLS": " http://a:9193/ , http://b:9192,"}
    assert metrics_urls_from_env(env) == ("http://a:9193", "http://b:9192")
    assert metrics_urls_from_env({}) == ()


def observation_of(observation) -> AssetObservation:
    return next(e for e in stream_events(observation, 10) if isinstance(e, AssetObservation))


def test_the_observation_holds_the_own_report_of_each_job_the_variable_names(backlog, job_listener):
    metrics, address = job_listener
    metrics.health.assigned()
    metrics.health.hbase_answered()
    env = {**backlog, "PROFILES_STREAM_METRICS_URLS": f"http://{address}"}

    metadata = observation_of(observe_stream(env)).metadata

    assert metadata[f"live_profiles at {address} events committed"].value == 20
    assert metadata[f"live_profiles at {address} ready"].text == "ok"
    assert metadata[f"live_profiles at {address} alive"].text == "ok"
    assert metadata[f"{GROUP} lag"].value == 10


def test_a_job_whose_listener_does_not_answer_is_said_beside_the_groups_lag(backlog, job_listener):
    _, address = job_listener
    stopped = "http://127.0.0.1:1"
    env = {**backlog, "PROFILES_STREAM_METRICS_URLS": f"{stopped},http://{address}"}

    metadata = observation_of(observe_stream(env)).metadata

    assert metadata["stream job at 127.0.0.1:1"].text.startswith("not answering: ")
    assert metadata[f"live_profiles at {address} events committed"].value == 20
    assert metadata[f"{GROUP} lag"].value == 10


def test_the_observer_records_an_observation_and_the_lag_check_when_it_starts_and_stops(
    backlog, job_listener
):
    _, address = job_listener
    env = {**backlog, "PROFILES_STREAM_METRICS_URLS": f"http://{address}"}
    instance = DagsterInstance.ephemeral()
    observer = StreamObserver(instance, env, interval_s=3600, max_lag=5)

    observer.start()
    assert len(observations(instance)) == 1
    observer.stop()

    recorded = observations(instance)
    assert observer.recorded == len(recorded) == 2
    for metadata in recorded:
        assert metadata[f"{GROUP} lag"].value == 10
        assert metadata[f"live_profiles at {address} events committed"].value == 20
    assert lag_check_results(instance) == [False, False]  # 10 behind, limit 5


def test_the_observer_records_on_its_cadence_until_stopped(backlog):
    instance = DagsterInstance.ephemeral()
    observer = StreamObserver(instance, backlog, interval_s=0.05).start()
    drive(lambda: time.sleep(0.05), lambda: observer.recorded >= 3)
    observer.stop()

    assert observer.recorded >= 4  # the first, two or more on the cadence, the last
    assert len(observations(instance)) == observer.recorded


@pytest.mark.parametrize("text", ["-1", "many", "1.5"])
def test_a_bad_max_lag_is_refused_naming_the_variable(text):
    with pytest.raises(ValueError, match="PROFILES_STREAM_MAX_LAG"):
        max_lag_from_env({"PROFILES_STREAM_MAX_LAG": text})
