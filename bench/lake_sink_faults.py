"""Exactly once from Kafka to the lake, under many ``kill -9`` of the sink and broker crashes.

A producer sends generated events (seed 7) to a real broker while ``profiles stream lake-sink``
runs as a process of its own and is killed (SIGKILL), ``--trials`` times, each time started
again: every other time at a random moment, otherwise the instant a new landing file appears
(a batch is being written); every ``--broker-every`` trials the broker is killed too and started
again over its data directory. A kill is counted as *mid-batch* when the group's committed
offsets hold an intent afterwards (files of a batch possibly written, its offsets not committed).
At the end a last sink reads the topic to its end, and the landing files are compared line by
line with the topic's messages: every message must be in the lake exactly once.

    .venv/bin/python bench/lake_sink_faults.py                  # 30 trials, broker every 10th
    .venv/bin/python bench/lake_sink_faults.py --trials 5       # a quick look
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from confluent_kafka import Consumer, KafkaException, TopicPartition  # noqa: E402

from profile_store.event_bus.producer import DeliveryError, EventProducer  # noqa: E402
from profile_store.event_bus.settings import EventBusSettings  # noqa: E402
from profile_store.event_bus.topics import ensure_topic  # noqa: E402
from profile_store.lake.storage import LocalLakeStorage  # noqa: E402
from profile_store.launchers.kafka_broker import KafkaBroker  # noqa: E402
from profile_store.realtime.lake_sink import (  # noqa: E402
    LakeSink,
    LakeSinkConfig,
    intent_end,
)

GROUP = "bench-lake-sink"


def generated_messages(root: Path, events: int, seed: int) -> list[tuple[bytes, bytes]]:
    """Three generated days, interleaved: batches span days."""
    from profile_store.realtime.traffic import keyed_traffic

    return keyed_traffic(root, 3, -(-events // 3), seed, interleave_days=True)[:events]


def landing_files(lake: Path) -> set[Path]:
    return set(lake.glob("landing/date=*/part-*.jsonl.gz"))


def kill_on_next_file(lake: Path, process: subprocess.Popen, bound: float) -> None:
    """SIGKILL as soon as a new landing file appears (a batch is being written), or at
    ``bound`` s."""
    known = landing_files(lake)
    deadline = time.monotonic() + bound
    while time.monotonic() < deadline and not (landing_files(lake) - known):
        time.sleep(0.002)
    os.kill(process.pid, signal.SIGKILL)


def produce(settings, messages, rate: float, stop: threading.Event, report: dict) -> None:
    """Send in slices of a tenth of a second; a slice that fails is sent again (a collector's
    client retries), so a message may be in the topic twice: the lake must hold what the topic
    holds, not what was meant."""
    producer = EventProducer(settings, delivery_timeout_s=10)
    step = max(1, int(rate / 10))
    sent = 0
    while sent < len(messages) and not stop.is_set():
        chunk = messages[sent : sent + step]
        started = time.monotonic()
        try:
            producer.send(chunk)
            sent += len(chunk)
        except DeliveryError as error:
            report["delivery_errors"] = report.get("delivery_errors", 0) + len(error.failures)
            time.sleep(0.5)
        time.sleep(max(0.0, 0.1 - (time.monotonic() - started)))
    report["sent"] = sent
    producer.close()


def committed_intents(settings: EventBusSettings, partitions: int) -> int:
    consumer = Consumer({"bootstrap.servers": settings.bootstrap_servers, "group.id": GROUP})
    try:
        for attempt in range(120):  # a restarted broker's coordinator may still be loading
            try:
                committed = consumer.committed(
                    [TopicPartition(settings.topic, p) for p in range(partitions)], timeout=60
                )
                break
            except KafkaException:
                if attempt == 119:
                    raise
                time.sleep(0.5)
    finally:
        consumer.close()
    return sum(1 for tp in committed if intent_end(tp.metadata) is not None)


def topic_values(settings: EventBusSettings) -> Counter:
    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap_servers,
            "group.id": f"bench-reader-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    high = 0
    for p in range(settings.partitions):
        high += consumer.get_watermark_offsets(TopicPartition(settings.topic, p), timeout=30)[1]
    consumer.subscribe([settings.topic])
    values: Counter = Counter()
    while sum(values.values()) < high:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                values[message.value()] += 1
    consumer.close()
    return values


def landed_values(storage: LocalLakeStorage) -> Counter:
    import gzip

    from profile_store.lake.landing_watch import is_landing_data

    values: Counter = Counter()
    for file in storage.list_files("landing"):
        if is_landing_data(file.path):
            values.update(gzip.decompress(storage.read_bytes(file.path)).splitlines())
    return values


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=30)
    parser.add_argument("--broker-every", type=int, default=10)
    parser.add_argument("--events", type=int, default=400_000)
    parser.add_argument("--rate", type=float, default=1_500)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    print(
        f"{platform.machine()} {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at "
        f"start; seed {args.seed}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-lake-sink-") as tmp:
        work = Path(tmp)
        messages = generated_messages(work / "generated", args.events, args.seed)
        broker = KafkaBroker(work / "kafka").start()
        settings = EventBusSettings(broker.bootstrap_servers, "events", args.partitions)
        ensure_topic(settings)
        lake = work / "lake"
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PROFILES_KAFKA_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
            "PROFILES_KAFKA_TOPIC": settings.topic,
        }
        stop, report = threading.Event(), {}
        producer = threading.Thread(
            target=produce, args=(settings, messages, args.rate, stop, report)
        )
        producer.start()
        mid_batch = between = broker_kills = 0
        started = time.monotonic()
        try:
            for trial in range(1, args.trials + 1):
                flush = rng.choice([0.3, 0.7, 1.5])
                sink = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "profile_store.cli",
                        "stream",
                        "lake-sink",
                        *("--lake", str(lake), "--group-id", GROUP),
                        *("--flush-seconds", str(flush), "--lateness-seconds", "0"),
                        "--log-level",
                        "WARNING",
                    ],
                    cwd=work,
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(rng.uniform(3.0, 9.0))
                if args.broker_every and trial % args.broker_every == 0:
                    broker.kill()
                    broker_kills += 1
                    time.sleep(rng.uniform(0.5, 3.0))
                    os.kill(sink.pid, signal.SIGKILL)
                    broker.start()
                elif trial % 2:
                    kill_on_next_file(lake, sink, bound=10.0)
                else:
                    os.kill(sink.pid, signal.SIGKILL)
                sink.wait()
                in_flight = committed_intents(settings, args.partitions)
                mid_batch += bool(in_flight)
                between += not in_flight
                print(
                    f"trial {trial}: killed "
                    + (f"with {in_flight} batches in flight" if in_flight else "between batches"),
                    flush=True,
                )
        finally:
            stop.set()
            producer.join()
        final = LakeSink(
            settings,
            LocalLakeStorage(lake),
            LakeSinkConfig(group_id=GROUP, flush_seconds=0.5, lateness=timedelta(0)),
        ).start()
        while True:
            final.step(0.5)
            final.flush()
            if final.lag() == 0:
                break
        final.close()
        topic, landed = topic_values(settings), landed_values(LocalLakeStorage(lake))
        broker.stop()
        missing = sum((topic - landed).values())
        repeated = sum((landed - topic).values())
        print(
            f"\n{args.trials} kill -9 of the sink over {time.monotonic() - started:.0f} s "
            f"({mid_batch} with a batch in flight, {between} between batches), "
            f"{broker_kills} kill -9 of the broker; producer: {report.get('sent', 0):,} sent, "
            f"{report.get('delivery_errors', 0):,} delivery errors (re-sent)"
        )
        print("| messages in the topic | lines in the lake | missing | repeated | recovered |")
        print("| ---: | ---: | ---: | ---: | ---: |")
        print(
            f"| {sum(topic.values()):,} | {sum(landed.values()):,} | {missing} | {repeated} | "
            f"{final.progress.recovered_batches} |"
        )
        return 0 if missing == repeated == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
