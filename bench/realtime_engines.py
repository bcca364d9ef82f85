"""The real-time path's engine, chosen by measurement: Spark Structured Streaming or a batched
confluent-kafka consumer, against the project's real Kafka broker on this machine.

Both candidates read the same events (a generated day, seed 7) from the same broker:

1. **backlog**: a topic filled with ``--events`` events beforehand, read to its end; events/s
   from the first message handed over to the last (Spark's JVM start is reported apart), and
   CPU seconds per million events (the reading process, children included).
2. **latency**: a producer sends ``--rate`` events/s for ``--seconds`` s while the engine reads;
   per event, the time from the producer's send (the message timestamp) to the moment the
   engine's batch handler holds it, as p50 / p99 / max.

The batched consumer's handler places each event in its landing day (``event_days``: the lake
sink's per-batch work), Spark's ``foreachBatch`` hands the same columns to Python as Arrow.
The lake sink itself (files written, offsets committed) is measured as a third row.

    .venv/bin/python bench/realtime_engines.py                       # 200,000 events, 5,000/s
    .venv/bin/python bench/realtime_engines.py --events 50000 --seconds 20   # a quick look

``spark-job`` is one Structured Streaming query (a process of its own, so that its jars are on
the class path from the start); ``tests/realtime/test_engine_choice.py`` runs it to check that
Spark's Kafka source works with this project's Spark at all.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from profile_store.launchers.maven_jars import resolve_jars  # noqa: E402

SPARK_KAFKA_VERSION = "4.2.0"  # Maven Central has no 4.3.0 of the connector
SPARK_KAFKA = f"org.apache.spark:spark-sql-kafka-0-10_2.13:{SPARK_KAFKA_VERSION}"
# What pyspark's own jars directory already holds (other versions would clash on the class path).
PYSPARK_BUNDLED = (
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "at.yawk.lz4:lz4-java",
    "org.lz4:lz4-java",
    "org.xerial.snappy:snappy-java",
    "com.github.luben:zstd-jni",
    "org.scala-lang:scala-library",
    "org.slf4j:slf4j-api",
    "org.apache.spark:spark-tags_2.13",
    "com.google.code.findbugs:jsr305",
    "org.scala-lang.modules:scala-parallel-collections_2.13",
)


def spark_kafka_jars() -> list[Path]:
    """Spark's Kafka source and what it needs beyond pyspark's jars, resolved by Maven once."""
    return resolve_jars(
        f"spark-sql-kafka-{SPARK_KAFKA_VERSION}", [SPARK_KAFKA], exclude=PYSPARK_BUNDLED
    )


# -- the Spark candidate: one query, in its own process -----------------------------------------


def spark_job(args: argparse.Namespace) -> int:
    """Read ``--topic`` with Structured Streaming; each micro-batch appends one JSON line to
    ``--out`` (batch id, rows, offset range per partition, handler times) and the per-event
    latencies (ms, int32) to ``--out`` + ``.latency``."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from profile_store.spark.session import local_spark_config

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    config = local_spark_config(shuffle_partitions=2)
    config["spark.driver.memory"] = args.driver_memory
    config["spark.jars"] = ",".join(str(jar) for jar in spark_kafka_jars())
    builder = SparkSession.builder.appName("realtime-engine-spark")
    for key, value in config.items():
        builder = builder.config(key, value)
    started = time.time()
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    out = Path(args.out)
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
    )
    if args.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets_per_trigger))
    stream = reader.load()

    def handle(batch, batch_id: int) -> None:
        handed = time.time()
        table = batch.select(
            "partition", "offset", F.unix_millis("timestamp").alias("ts"), "value"
        ).toArrow()
        now_ms = time.time() * 1000
        ts = table.column("ts").to_numpy()
        partitions = table.column("partition").to_numpy()
        offsets = table.column("offset").to_numpy()
        ranges = {
            str(int(p)): [int(offsets[partitions == p].min()), int(offsets[partitions == p].max())]
            for p in np.unique(partitions)
        }
        with open(str(out) + ".latency", "ab") as latency:
            latency.write((now_ms - ts).astype(np.int32).tobytes())
        with open(out, "a") as lines:
            lines.write(
                json.dumps(
                    {
                        "batch_id": batch_id,
                        "rows": table.num_rows,
                        "offsets": ranges,
                        "handed": handed,
                        "done": time.time(),
                    }
                )
                + "\n"
            )

    if args.seconds:
        query = (
            stream.writeStream.foreachBatch(handle)
            .option("checkpointLocation", args.checkpoint)
            .trigger(processingTime="0 seconds")
            .start()
        )
        Path(str(out) + ".started").write_text(str(time.time() - started))
        query.awaitTermination(args.seconds)
        query.stop()
    else:
        # Each run is a new query over the same checkpoint: it must start where the last ended.
        for run in range(1, args.runs + 1):
            if run > 1:
                _wait_for(Path(f"{out}.go-{run}"))
            query = (
                stream.writeStream.foreachBatch(handle)
                .option("checkpointLocation", args.checkpoint)
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            Path(f"{out}.done-{run}").write_text("")
    spark.stop()
    return 0


def _wait_for(path: Path, timeout: float = 600.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear within {timeout:.0f} s")
        time.sleep(0.1)


def _spark_process(
    bootstrap: str, topic: str, work: Path, seconds: float = 0, max_offsets: int = 0
) -> subprocess.Popen:
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "spark-job",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--checkpoint",
        str(work / "checkpoint"),
        "--out",
        str(work / "batches.jsonl"),
        "--seconds",
        str(seconds),
        "--max-offsets-per-trigger",
        str(max_offsets),
    ]
    return subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


class TreeCpu:
    """CPU seconds of processes and their descendants (Spark's JVM is a grandchild that
    ``RUSAGE_CHILDREN`` never sees), sampled from /proc every quarter second: a process that
    exits counts up to its last sample."""

    def __init__(self, *pids: int) -> None:
        self.pids = pids
        self.seen: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.25):
            self.sample()

    def sample(self) -> None:
        parents: dict[int, int] = {}
        times: dict[int, float] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = int(fields[1])
            times[int(entry)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        tree, frontier = set(self.pids), list(self.pids)
        while frontier:
            parent = frontier.pop()
            children = [pid for pid, ppid in parents.items() if ppid == parent]
            tree.update(children)
            frontier.extend(children)
        for pid in tree & times.keys():
            self.seen[pid] = max(self.seen.get(pid, 0.0), times[pid])

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return sum(self.seen.values())


def _self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- the measurements ----------------------------------------------------------------------------


def generated_events(count: int, seed: int, work: Path) -> list[tuple[bytes, bytes]]:
    """``count`` messages of generated traffic (malformed lines and duplicates included)."""
    from profile_store.realtime.traffic import keyed_traffic

    days = max(1, -(-count // 200_000))
    return keyed_traffic(work / "lake", days, -(-count // days), seed)[:count]


def fill_topic(settings, messages: list[tuple[bytes, bytes]]) -> None:
    from profile_store.event_bus.producer import EventProducer

    with EventProducer(settings) as producer:
        for start in range(0, len(messages), 50_000):
            producer.send(messages[start : start + 50_000])


def rate_producer(settings, **properties):
    """A producer with the event bus's guarantees that does not wait for each send."""
    from confluent_kafka import Producer

    return Producer(
        settings.client_config(
            **{
                "linger.ms": 5,
                "acks": "all",
                "enable.idempotence": True,
                "partitioner": "murmur2_random",
                **properties,
            }
        )
    )


def produce_at_rate(settings, messages, rate: float, seconds: float, stop: threading.Event):
    """Send ``rate`` events/s (in 20 slices a second) for ``seconds`` s, without waiting."""
    producer = rate_producer(settings)
    slice_size = max(1, int(rate / 20))
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < seconds and not stop.is_set():
        due = int((time.monotonic() - started) * rate)
        while sent < due:
            key, value = messages[sent % len(messages)]
            producer.produce(settings.topic, value=value, key=key)
            sent += 1
            if sent % slice_size == 0:
                producer.poll(0)
        time.sleep(0.05)
    producer.flush(30)
    return sent


def consumer_backlog(settings, total: int) -> dict:
    from profile_store.event_bus.consumer import batch_consumer, consume_batch
    from profile_store.realtime.event_days import event_days

    consumer = batch_consumer(settings, f"bench-backlog-{time.time_ns()}")
    read = 0
    first = None
    cpu = _self_cpu()
    while read < total:
        batch = consume_batch(consumer, 10_000, 1.0)
        if len(batch):
            first = first or time.monotonic()
            event_days(batch.values, batch.timestamps_ms)
            read += len(batch)
    seconds = time.monotonic() - first
    cpu = _self_cpu() - cpu
    consumer.close()
    return {"events_per_s": read / seconds, "cpu_s_per_million": cpu / read * 1e6, "start_s": 0.0}


def lake_sink_backlog(settings, total: int, work: Path) -> dict:
    from profile_store.lake.storage import LocalLakeStorage
    from profile_store.realtime.lake_sink import LakeSink, LakeSinkConfig

    sink = LakeSink(
        settings,
        LocalLakeStorage(work / "sink-lake"),
        LakeSinkConfig(group_id=f"bench-sink-{time.time_ns()}", flush_seconds=10.0),
    ).start()
    cpu = _self_cpu()
    first = None
    while sink.progress.messages < total:
        if sink.step(1.0) and first is None:
            first = time.monotonic()
    sink.flush()
    seconds = time.monotonic() - first
    cpu = _self_cpu() - cpu
    sink.close()
    return {
        "events_per_s": total / seconds,
        "cpu_s_per_million": cpu / total * 1e6,
        "start_s": 0.0,
        "files": sink.progress.files_written,
    }


def spark_backlog(settings, total: int, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    started = time.time()
    process = _spark_process(settings.bootstrap_servers, settings.topic, work)
    tree = TreeCpu(process.pid)
    output, _ = process.communicate()
    cpu = tree.stop()
    if process.returncode != 0:
        raise RuntimeError(output.decode(errors="replace")[-4000:])
    batches = [json.loads(line) for line in (work / "batches.jsonl").read_text().splitlines()]
    rows = sum(b["rows"] for b in batches)
    assert rows == total, f"Spark read {rows} of {total}"
    first = min(b["handed"] for b in batches)
    last = max(b["done"] for b in batches)
    return {
        "events_per_s": rows / (last - first) if last > first else float("nan"),
        "cpu_s_per_million": cpu / rows * 1e6,
        "start_s": first - started,
        "batches": len(batches),
    }


def consumer_latency(settings, messages, rate: float, seconds: float) -> dict:
    from profile_store.event_bus.consumer import batch_consumer, consume_batch
    from profile_store.realtime.event_days import event_days

    consumer = batch_consumer(settings, f"bench-latency-{time.time_ns()}")
    while not consumer.assignment():
        consume_batch(consumer, 1, 0.2)
    stop = threading.Event()
    sent: list[int] = []
    producer = threading.Thread(
        target=lambda: sent.append(produce_at_rate(settings, messages, rate, seconds, stop))
    )
    latencies = []
    cpu = _self_cpu()
    producer.start()
    read = 0
    deadline = time.monotonic() + seconds + 60
    while (producer.is_alive() or read < sum(sent)) and time.monotonic() < deadline:
        batch = consume_batch(consumer, 10_000, 0.1)
        if len(batch):
            event_days(batch.values, batch.timestamps_ms)
            latencies.append(time.time() * 1000 - batch.timestamps_ms)
            read += len(batch)
    producer.join()
    cpu = _self_cpu() - cpu
    consumer.close()
    return _latency_summary(np.concatenate(latencies), read, sum(sent), cpu)


def spark_latency(settings, messages, rate: float, seconds: float, work: Path) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    process = _spark_process(settings.bootstrap_servers, settings.topic, work, seconds + 15)
    tree = TreeCpu(process.pid)
    started = work / "batches.jsonl.started"
    while not started.exists():
        if process.poll() is not None:
            raise RuntimeError(process.stdout.read().decode(errors="replace")[-4000:])
        time.sleep(0.2)
    time.sleep(5)  # the first (empty) micro-batches have run
    stop = threading.Event()
    before = sum(tree.seen.values())
    sent = produce_at_rate(settings, messages, rate, seconds, stop)
    output, _ = process.communicate()
    cpu = tree.stop() - before
    if process.returncode != 0:
        raise RuntimeError(output.decode(errors="replace")[-4000:])
    latencies = np.fromfile(str(work / "batches.jsonl") + ".latency", dtype=np.int32)
    return _latency_summary(latencies, len(latencies), sent, cpu)


def _latency_summary(latencies: np.ndarray, read: int, sent: int, cpu: float) -> dict:
    return {
        "p50_ms": float(np.percentile(latencies, 50)),
        "p99_ms": float(np.percentile(latencies, 99)),
        "max_ms": float(latencies.max()),
        "read": read,
        "sent": sent,
        "cpu_s": cpu,
    }


def measure(args: argparse.Namespace) -> int:
    from profile_store.event_bus.settings import EventBusSettings
    from profile_store.event_bus.topics import ensure_topic
    from profile_store.launchers.kafka_broker import temporary_broker

    print(
        f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at start; seed {args.seed}",
        flush=True,
    )
    with tempfile.TemporaryDirectory(prefix="bench-realtime-") as tmp, temporary_broker() as broker:
        work = Path(tmp)
        messages = generated_events(args.events, args.seed, work)
        mean_bytes = sum(len(value) for _key, value in messages) / len(messages)
        print(f"{len(messages):,} events, {mean_bytes:.0f} B each", flush=True)

        def topic(name: str) -> EventBusSettings:
            settings = EventBusSettings(broker.bootstrap_servers, name, args.partitions)
            ensure_topic(settings)
            return settings

        backlog = topic("backlog")
        fill_topic(backlog, messages)
        rows = {}
        rows["batched consumer (confluent-kafka + Arrow)"] = consumer_backlog(
            backlog, len(messages)
        )
        print("consumer backlog done", flush=True)
        rows["lake sink (files written, offsets committed)"] = lake_sink_backlog(
            backlog, len(messages), work
        )
        print("lake sink backlog done", flush=True)
        rows[f"Spark Structured Streaming {SPARK_KAFKA_VERSION} source"] = spark_backlog(
            backlog, len(messages), work / "spark-backlog"
        )
        print("spark backlog done", flush=True)
        latency = {
            "batched consumer (confluent-kafka + Arrow)": consumer_latency(
                topic("latency-consumer"), messages, args.rate, args.seconds
            )
        }
        print("consumer latency done", flush=True)
        latency[f"Spark Structured Streaming {SPARK_KAFKA_VERSION} source"] = spark_latency(
            topic("latency-spark"), messages, args.rate, args.seconds, work / "spark-latency"
        )
        print(f"load average {os.getloadavg()[0]:.1f} at the end\n", flush=True)
    print(f"backlog of {len(messages):,} events, {args.partitions} partitions")
    print("| engine | events/s | CPU s per 1M events | start-up s |")
    print("| --- | ---: | ---: | ---: |")
    for name, row in rows.items():
        print(
            f"| {name} | {row['events_per_s']:,.0f} | {row['cpu_s_per_million']:.1f} | "
            f"{row['start_s']:.1f} |"
        )
    print(f"\nlatency at {args.rate:,.0f} events/s for {args.seconds:.0f} s")
    print("| engine | p50 ms | p99 ms | max ms | read / sent | CPU s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, row in latency.items():
        print(
            f"| {name} | {row['p50_ms']:.0f} | {row['p99_ms']:.0f} | {row['max_ms']:.0f} | "
            f"{row['read']:,} / {row['sent']:,} | {row['cpu_s']:.1f} |"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command")
    job = commands.add_parser("spark-job", help="one Structured Streaming query (see the doc)")
    job.add_argument("--bootstrap", required=True)
    job.add_argument("--topic", required=True)
    job.add_argument("--checkpoint", required=True)
    job.add_argument("--out", required=True)
    job.add_argument("--seconds", type=float, default=0, help="0: read what is there, then stop")
    job.add_argument(
        "--runs",
        type=int,
        default=1,
        help="with --seconds 0: queries one after the other over the checkpoint; run N starts "
        "once OUT.go-N exists, and OUT.done-N is written after each",
    )
    job.add_argument("--max-offsets-per-trigger", type=int, default=0)
    job.add_argument("--driver-memory", default="1g")
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--rate", type=float, default=5_000)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    if args.command == "spark-job":
        return spark_job(args)
    return measure(args)


if __name__ == "__main__":
    sys.exit(main())
