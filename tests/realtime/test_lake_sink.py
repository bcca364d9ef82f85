"""Kafka to the lake, against the real broker: each event once in the landing day of its UTC
time, a day closed after its lateness and only once the events sent before then landed, a late
event reopening its day, and exactly once across kill -9 of the sink mid-batch and a broker
restart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import boto3
import pytest
from confluent_kafka import KafkaException, TopicPartition
from group_offsets import committed_once_loaded
from landing_files import data_files, drive, event_line, landed, utc_day

from profile_store.event_bus.producer import EventProducer
from profile_store.event_bus.settings import EventBusSettings
from profile_store.lake.landing_watch import changed_days, complete_days
from profile_store.lake.storage import LakeStorage, LocalLakeStorage, S3LakeStorage
from profile_store.realtime.lake_sink import (
    LakeSink,
    LakeSinkConfig,
    intent_end,
    sink_file_name,
)
from profile_store.realtime.traffic import keyed_traffic

REPO = Path(__file__).resolve().parents[2]
D1, D2 = "2026-11-01", "2026-11-02"


def end_of(day: str) -> float:
    return (datetime.fromisoformat(day).replace(tzinfo=UTC) + timedelta(days=1)).timestamp()


def send(bus: EventBusSettings, messages: list[tuple[bytes, bytes]]) -> None:
    with EventProducer(bus) as producer:
        producer.send(messages)


def events_of(day: str, count: int, prefix: str = "e", users: int = 7) -> list[tuple[bytes, bytes]]:
    return [
        (
            f"u{i % users}".encode(),
            event_line(f"{prefix}{i}", f"{day}T{i % 24:02d}:15:03.250Z", f"u{i % users}"),
        )
        for i in range(count)
    ]


@pytest.fixture
def sink_for():
    """Start a lake sink on a test's topic (each sink left open is closed after the test)."""
    started: list[LakeSink] = []

    def start(
        bus: EventBusSettings,
        storage: LakeStorage,
        *,
        lateness: timedelta = timedelta(0),
        clock=time.time,
        group: str | None = None,
        **config,
    ) -> LakeSink:
        settings = LakeSinkConfig(
            group_id=group or f"sink-{bus.topic}",
            lateness=lateness,
            flush_seconds=config.pop("flush_seconds", 0.2),
            close_check_seconds=0.05,
            **config,
        )
        sink = LakeSink(bus, storage, settings, clock=clock).start()
        started.append(sink)
        return sink

    yield start
    for sink in started:
        sink.close()


def landed_lines(storage: LakeStorage) -> Counter:
    return Counter(line for lines in landed(storage).values() for line in lines)


def caught_up(sink: LakeSink) -> bool:
    try:
        return sink.lag() == 0
    except KafkaException:  # the group is still rebalancing
        return False


def run_until_caught_up(sink: LakeSink, total: int) -> None:
    drive(lambda: sink.step(0.2), lambda: sink.progress.messages >= total)
    sink.flush()
    drive(lambda: sink.step(0.2), lambda: caught_up(sink))


def test_each_event_lands_once_in_the_landing_day_of_its_utc_time(bus, tmp_path, sink_for):
    messages = keyed_traffic(tmp_path / "generated", 2, 1500, seed=5, interleave_days=True)
    send(bus, messages)
    storage = LocalLakeStorage(tmp_path / "lake")
    sink = sink_for(bus, storage)
    run_until_caught_up(sink, len(messages))
    sink.close()

    assert landed_lines(storage) == Counter(value for _key, value in messages)
    placed = [(day, utc_day(line)) for day, lines in landed(storage).items() for line in lines]
    assert all(day == own for day, own in placed if own is not None)
    assert {D1, D2} <= {day for day, _own in placed}


def test_events_with_a_zone_offset_land_in_their_utc_day(bus, tmp_path, sink_for):
    late_evening = event_line("west", "2026-11-01T23:30:00-02:00")  # 01:30 UTC on the 2nd
    early_morning = event_line("east", "2026-11-02T00:30:00.000+01:00")  # 23:30 UTC on the 1st
    send(bus, [(b"u1", late_evening), (b"u1", early_morning)])
    storage = LocalLakeStorage(tmp_path / "lake")
    run_until_caught_up(sink_for(bus, storage), 2)

    assert landed(storage) == {D1: [early_morning], D2: [late_evening]}


def test_a_day_is_closed_only_once_its_lateness_has_passed(bus, tmp_path, sink_for):
    send(bus, events_of(D1, 40))
    storage = LocalLakeStorage(tmp_path / "lake")
    now = [end_of(D1) + 3600 - 1]
    sink = sink_for(bus, storage, lateness=timedelta(hours=1), clock=lambda: now[0])
    run_until_caught_up(sink, 40)
    assert sink.close_due_days(force_check=True) == []
    assert not storage.exists(f"landing/date={D1}/_SUCCESS")

    now[0] += 1
    assert sink.close_due_days(force_check=True) == [D1]
    assert complete_days(storage)[D1].files == len(data_files(storage))


def test_a_day_closes_only_after_every_event_sent_before_its_deadline_landed(
    bus, tmp_path, sink_for
):
    messages = events_of(D1, 600) + events_of(D2, 60, prefix="f")
    send(bus, messages)
    storage = LocalLakeStorage(tmp_path / "lake")
    # Past the deadline already, reading 50 messages a poll and writing them at once: the day
    # is due, and has files, long before the sink has read what was sent for it.
    sink = sink_for(bus, storage, max_poll_messages=50, flush_bytes=1)
    seen_when_marked = []

    def step() -> None:
        sink.step(0.2)
        if storage.exists(f"landing/date={D1}/_SUCCESS") and not seen_when_marked:
            seen_when_marked.append(len(landed(storage).get(D1, [])))

    drive(step, lambda: bool(seen_when_marked))
    assert seen_when_marked == [600]


def test_an_event_for_a_closed_day_lands_as_a_new_file_and_the_day_runs_again(
    bus, tmp_path, sink_for
):
    send(bus, events_of(D1, 30))
    storage = LocalLakeStorage(tmp_path / "lake")
    sink = sink_for(bus, storage)
    drive(lambda: sink.step(0.2), lambda: storage.exists(f"landing/date={D1}/_SUCCESS"))
    before = complete_days(storage)[D1]
    files_before = {f.path: f.size for f in storage.list_files(f"landing/date={D1}")}

    late = event_line("late-1", f"{D1}T23:59:59.999Z", "u-offline")
    send(bus, [(b"u-offline", late)])
    drive(lambda: sink.step(0.2), lambda: late in landed(storage).get(D1, []))
    sink.close()

    after = complete_days(storage)
    assert after[D1].files == before.files + 1  # the new file counts: the marker came after it
    assert changed_days({D1: before.digest}, after) == [after[D1]]
    files_after = {f.path: f.size for f in storage.list_files(f"landing/date={D1}")}
    new = set(files_after) - set(files_before) - {f"landing/date={D1}/_SUCCESS"}
    assert len(new) == 1
    assert all(files_after[path] == size for path, size in files_before.items() if "part-" in path)


def test_out_of_order_events_of_one_user_each_land_in_their_own_day(bus, tmp_path, sink_for):
    times = [f"{D2}T08:00:00Z", f"{D1}T09:00:00Z", f"{D2}T07:00:00Z", f"{D1}T23:00:00Z"]
    lines = [event_line(f"o{i}", moment, "u-one") for i, moment in enumerate(times)]
    send(bus, [(b"u-one", line) for line in lines])
    storage = LocalLakeStorage(tmp_path / "lake")
    run_until_caught_up(sink_for(bus, storage), 4)

    assert landed(storage) == {D1: [lines[1], lines[3]], D2: [lines[0], lines[2]]}


def test_a_restarted_sink_closes_the_days_an_earlier_run_left_open(bus, tmp_path, sink_for):
    send(bus, events_of(D1, 20))
    storage = LocalLakeStorage(tmp_path / "lake")
    now = [end_of(D1) - 60]  # still inside the day
    first = sink_for(bus, storage, clock=lambda: now[0])
    run_until_caught_up(first, 20)
    first.close()
    assert not storage.exists(f"landing/date={D1}/_SUCCESS")

    now[0] = end_of(D1)
    second = sink_for(bus, storage, clock=lambda: now[0])
    assert second.open_days == [D1]
    drive(lambda: second.step(0.2), lambda: storage.exists(f"landing/date={D1}/_SUCCESS"))
    second.close()
    assert second.progress.messages == 0


def test_closing_the_sink_writes_and_commits_what_it_holds(bus, tmp_path, sink_for):
    send(bus, events_of(D1, 25))
    storage = LocalLakeStorage(tmp_path / "lake")
    sink = sink_for(bus, storage, flush_seconds=3600)
    drive(lambda: sink.step(0.2), lambda: sink.progress.messages >= 25)
    assert data_files(storage) == []
    sink.close()

    assert sum(landed_lines(storage).values()) == 25
    assert caught_up(sink_for(bus, storage))


def committed_intents(bus: EventBusSettings, group: str) -> dict[int, tuple[int, int]]:
    """Partition -> (committed offset, intent end) for partitions with an unfinished batch."""
    config = {"bootstrap.servers": bus.bootstrap_servers, "group.id": group}
    committed = [
        committed_once_loaded(config, TopicPartition(bus.topic, p)) for p in range(bus.partitions)
    ]
    return {
        tp.partition: (tp.offset, intent_end(tp.metadata))
        for tp in committed
        if intent_end(tp.metadata) is not None
    }


@pytest.mark.parametrize(
    ("stall_at", "files_before_kill"),
    [("write-0", 0), ("write-1", 1), ("final-commit", None)],
    ids=["before-the-first-file", "after-one-file", "before-the-offsets-commit"],
)
def test_a_kill_9_in_the_middle_of_a_batch_lands_each_event_exactly_once(
    bus, tmp_path, stall_at, files_before_kill, sink_for
):
    messages = (
        events_of(D1, 150)
        + events_of(D2, 150, prefix="f")
        + events_of("2026-11-03", 60, prefix="g")
    )
    send(bus, messages)
    storage = LocalLakeStorage(tmp_path / "lake")
    group = f"sink-{bus.topic}"
    flag = tmp_path / "stalled"
    child = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("sink_child.py")),
            *("--bootstrap", bus.bootstrap_servers, "--topic", bus.topic, "--group", group),
            *("--lake", str(tmp_path / "lake"), "--flag", str(flag), "--stall-at", stall_at),
        ],
        stderr=subprocess.PIPE,
    )
    drive(lambda: time.sleep(0.1), lambda: flag.exists() or child.poll() is not None)
    assert child.poll() is None, child.stderr.read().decode()
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    files_at_kill = data_files(storage)
    intents = committed_intents(bus, group)
    assert intents, "the kill came after an intent was committed"
    if files_before_kill is not None:
        assert len(files_at_kill) == files_before_kill

    sink = sink_for(bus, storage, group=group)
    run_until_caught_up(sink, 0)
    sink.close()

    assert landed_lines(storage) == Counter(value for _key, value in messages)
    assert sink.progress.recovered_batches == len(intents)
    assert sink.progress.files_kept == len(files_at_kill)
    names = {path.rsplit("/", 1)[1] for path in data_files(storage)}
    for partition, (start, end) in intents.items():
        assert sink_file_name(bus.topic, partition, start, end) in names
    assert committed_intents(bus, group) == {}


def pause_while_running(thread: threading.Thread):
    def pause() -> None:
        assert thread.is_alive(), "the sink stopped"
        time.sleep(0.2)

    return pause


def test_a_broker_restart_while_the_sink_holds_a_batch_loses_and_repeats_nothing(
    kafka_broker, bus, tmp_path, sink_for
):
    first = events_of(D1, 200)
    second = events_of(D2, 200, prefix="f")
    send(bus, first)
    storage = LocalLakeStorage(tmp_path / "lake")
    sink = sink_for(bus, storage, flush_seconds=2.0)
    stop = threading.Event()
    runner = threading.Thread(target=sink.run, args=(stop, 0.2))
    runner.start()
    try:
        drive(lambda: time.sleep(0.05), lambda: sink.progress.messages >= 200)
        kafka_broker.kill()  # the batch is held, its intent not yet committed
        kafka_broker.start()
        send(bus, second)
        drive(pause_while_running(runner), lambda: sum(landed_lines(storage).values()) >= 400)
    finally:
        stop.set()
        runner.join(120)
    assert not runner.is_alive()
    assert landed_lines(storage) == Counter(value for _key, value in first + second)


def test_the_sink_writes_an_s3_lake_and_marks_a_reopened_day_after_its_new_file(
    bus, tmp_path, s3_endpoint, sink_for
):
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket="realtime-sink")
    storage = S3LakeStorage("s3://realtime-sink/lake", client)
    send(bus, events_of(D1, 40))
    sink = sink_for(bus, storage)
    drive(lambda: sink.step(0.2), lambda: storage.exists(f"landing/date={D1}/_SUCCESS"))
    before = complete_days(storage)[D1]
    late = event_line("late-s3", f"{D1}T12:00:00Z")
    send(bus, [(b"u1", late)])
    drive(lambda: sink.step(0.2), lambda: late in landed(storage).get(D1, []))
    sink.close()

    after = complete_days(storage)[D1]
    assert after.files == before.files + 1
    assert sum(landed_lines(storage).values()) == 41


def test_profiles_stream_lake_sink_runs_until_sigterm(bus, tmp_path):
    messages = events_of(D1, 50) + events_of(D2, 50, prefix="f")
    send(bus, messages)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
        "PROFILES_KAFKA_TOPIC": bus.topic,
        "PROFILES_KAFKA_PARTITIONS": str(bus.partitions),
    }
    lake = tmp_path / "lake"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "profile_store.cli",
            "stream",
            "lake-sink",
            *("--lake", str(lake), "--lateness-seconds", "0", "--flush-seconds", "0.5"),
        ],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
    )
    storage = LocalLakeStorage(lake)
    drive(
        lambda: time.sleep(0.2),
        lambda: process.poll() is not None or storage.exists(f"landing/date={D2}/_SUCCESS"),
    )
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)

    assert process.returncode == 0, err.decode()
    assert storage.exists(f"landing/date={D1}/_SUCCESS")
    assert landed_lines(storage) == Counter(value for _key, value in messages)
    assert b"day 2026-11-02 closed" in err


def test_profiles_stream_lake_sink_refuses_a_bad_setting_naming_it(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "stream", "lake-sink", "--lake", str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "PROFILES_KAFKA_PARTITIONS": "six"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert "PROFILES_KAFKA_PARTITIONS: expected a whole number >= 1, got 'six'" in completed.stderr
