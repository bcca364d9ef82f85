"""Kafka to the profiles, live: from an event acknowledged by Kafka to the moment a read of
ANOTHER id of the same person shows it, at a sustained rate, on this machine.

Everything runs here for real: the project's Kafka broker, the embedded HBase gateway (its default
workers; ``--store apache-hbase``: the project's standalone Apache HBase, one region server and its
Thrift server, instead) holding ``--persons`` persons of one to five ids each (compacted rows:
master, linked ids, daily state as of the end of yesterday), and ``profiles stream live-profiles``
as its own process (``--jobs N``: N of them in one consumer group, sharing the partitions). A
producer sends generated events of those ids at ``--rate`` events/s; a few times a second one of
them is a *probe*: an event of a rule-matching type on one id of a person of several ids, whose
segment expiry is unique. A prober reads the person's OTHER ids with ``segments_many`` (the bidders'
read, one round trip for all pending probes) every ``--poll-ms``, and a probe's latency is the time
from Kafka's acknowledgement of its send to the first read that shows it.

1. **sustained**: ``--rate`` for ``--seconds`` (5,000/s for 600 s by default): p50 / p99 / max,
   the job's RSS sampled every 5 s (first, last, highest), the CPU of the job, the store, the
   broker and this process (the producer and the prober), and how busy the machine was.
2. **ramp** (``--ramp``): rates going up by ``--ramp-step`` for ``--ramp-seconds`` each, until
   p99 passes ``--bar-ms`` or probes are no longer all seen; the highest rate that met it.
3. **backlog** (``--backlog N``, instead of 1 and 2): once the job has caught up with the
   warm-up, N events sent as fast as the producer goes; the job's and the store's CPU until
   the job has committed them all, per event. Unlike latencies, that is the work itself, which
   other work on the machine changes little: the figure to compare changes by. With it, the
   row writes and cells per applied event, from the jobs' own counts when they stop.

    .venv/bin/python bench/realtime.py                              # 600 s at 5,000/s
    .venv/bin/python bench/realtime.py --seconds 60 --ramp         # a quick look, then the ramp
    .venv/bin/python bench/realtime.py --backlog 300000            # CPU per event
    .venv/bin/python bench/realtime.py --store apache-hbase         # the same on Apache HBase

The machine's load average is printed at the start and the end of each phase: figures taken
beside other work are rough.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtime_engines import TreeCpu, rate_producer  # noqa: E402

PROBE_TYPE = "probe"
PROBE_RULE = {"segment": "probe", "event_type": PROBE_TYPE, "ttl_days": 1}
TRAFFIC = (
    ("com.shopfast.android", "view_item", {"product_type": "shoes"}),
    ("com.shopfast.android", "view_item", {"product_type": "hats"}),
    ("com.shopfast.android", "add_to_cart", {}),
    ("com.shopfast.android", "purchase", {}),
    ("com.pixelquest.dragons", "open", {}),
    ("com.pixelquest.dragons", "iap_purchase", {}),
    ("com.dailyherald.reader", "click", {}),
)


@dataclass
class Population:
    persons: list[list[str]]
    ids: list[str]
    several: list[int]  # persons with two ids or more


def population(count: int, seed: int) -> Population:
    rng = random.Random(seed)
    persons = [
        [f"bench-{p:07d}-{i}" for i in range(rng.choice((1, 2, 2, 3, 3, 4, 5)))]
        for p in range(count)
    ]
    return Population(
        persons,
        [i for ids in persons for i in ids],
        [p for p, ids in enumerate(persons) if len(ids) > 1],
    )


def load_profiles(table, people: Population, as_of_ms: int) -> int:
    """Compacted rows of every person, as compaction writes them."""
    from profile_store.profiles.table import ProfileRow, profile_cells, profile_key

    cells = 0
    with table.batch(batch_size=20_000) as batch:
        for ids in people.persons:
            for profile in ids:
                row = ProfileRow(
                    profile=profile,
                    id_type="cookie",
                    master=ids[0],
                    first_seen_ms=as_of_ms - 86_400_000,
                    devices=len(ids),
                    as_of_ms=as_of_ms,
                    associations={other: "cookie" for other in ids if other != profile},
                )
                written = profile_cells(row)
                batch.put(profile_key(profile), written)
                cells += len(written)
    return cells


def event_pool(people: Population, count: int, seed: int, start_ms: int) -> list[tuple]:
    """``count`` keyed messages of the population's ids, times in the minute before the start."""
    rng = random.Random(seed)
    pool = []
    for n in range(count):
        user = rng.choice(people.ids)
        app, kind, attributes = rng.choice(TRAFFIC)
        body = {
            "event_id": f"b{n}",
            "app_id": app,
            "user_id": user,
            "id_type": "cookie",
            "event_time": _iso(start_ms - rng.randrange(60_000)),
            "event_type": kind,
            "event_attributes": attributes,
        }
        pool.append((user.encode(), json.dumps(body, separators=(",", ":")).encode()))
    return pool


def _iso(epoch_ms: int) -> str:
    seconds, millis = divmod(epoch_ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{millis:03d}Z"


@dataclass
class Probe:
    person: int
    sent_id: str
    read_id: str
    expiry_ms: int
    acked: float | None = None
    seen: float | None = None


@dataclass
class Phase:
    rate: float
    seconds: float
    probes: list[Probe] = field(default_factory=list)
    sent: int = 0
    rss_kb: list[int] = field(default_factory=list)
    load: tuple[float, float] = (0.0, 0.0)
    job_cpu_s: float = 0.0
    store_cpu_s: float = 0.0
    broker_cpu_s: float = 0.0
    bench_cpu_s: float = 0.0  # this process: the producer and the prober
    busy_share: float = 0.0  # of the machine's CPU time, whatever used it

    def latencies_ms(self) -> np.ndarray:
        return np.array(
            [(p.seen - p.acked) * 1000 for p in self.probes if p.seen and p.acked], dtype=float
        )

    def summary(self) -> dict:
        lat = self.latencies_ms()
        seen = len(lat)
        return {
            "rate": self.rate,
            "seconds": self.seconds,
            "sent": self.sent,
            "probes": len(self.probes),
            "probes_seen": seen,
            "p50_ms": float(np.percentile(lat, 50)) if seen else None,
            "p99_ms": float(np.percentile(lat, 99)) if seen else None,
            "max_ms": float(lat.max()) if seen else None,
            "rss_mb_first_last_max": [
                round(kb / 1024, 1)
                for kb in (
                    (self.rss_kb[0], self.rss_kb[-1], max(self.rss_kb)) if self.rss_kb else ()
                )
            ],
            "load_average_start_end": [round(x, 1) for x in self.load],
            "job_cpu_s": round(self.job_cpu_s, 1),
            "store_cpu_s": round(self.store_cpu_s, 1),
            "broker_cpu_s": round(self.broker_cpu_s, 1),
            "bench_cpu_s": round(self.bench_cpu_s, 1),
            "machine_busy_percent": round(100 * self.busy_share, 1),
            # Each probe's acknowledgement (epoch s) and latency (ms; None: never seen), to
            # line stalls up with the gateway's and the job's logs.
            "probe_timeline": [
                [round(p.acked, 3), round((p.seen - p.acked) * 1000) if p.seen else None]
                for p in self.probes
                if p.acked
            ],
        }


@dataclass
class Setup:
    settings: object
    address: tuple[str, int]
    store_pids: tuple[int, ...]  # the embedded gateway, or Apache HBase's JVMs
    broker_pid: int
    jobs: list[subprocess.Popen]  # the live job's processes, one consumer group

    def job_stopped(self) -> bool:
        return any(job.poll() is not None for job in self.jobs)

    people: Population
    work: Path
    # Each job's "live profiles stopped" line, read once the jobs ended.
    final_summaries: list[str] = field(default_factory=list)


class Prober:
    """Reads the OTHER id of each pending probe's person with ``segments_many`` (one round
    trip per poll) until it shows the probe's expiry."""

    def __init__(self, address: tuple[str, int], poll_ms: float) -> None:
        import happybase

        from profile_store.profiles.reads import MAX_IDS, ProfileReader
        from profile_store.profiles.table import PROFILE_TABLE

        self._connection = happybase.Connection(*address)
        table = self._connection.table(PROFILE_TABLE)

        class _Open:
            def __enter__(self_inner):
                return table

            def __exit__(self_inner, *exc):
                return False

        self.reader = ProfileReader(lambda: _Open())
        self.max_ids = MAX_IDS  # ids per segments_many
        self.poll_s = poll_ms / 1000
        self.pending: dict[int, Probe] = {}
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def add(self, probe: Probe) -> None:
        with self.lock:
            self.pending[probe.person] = probe

    def busy(self, person: int) -> bool:
        with self.lock:
            return person in self.pending

    def _run(self) -> None:
        while not self.stop.is_set():
            with self.lock:
                waiting = [p for p in self.pending.values() if p.acked is not None]
            if waiting:
                answers: dict = {}
                for start in range(0, len(waiting), self.max_ids):  # a backlog: several reads
                    chunk = waiting[start : start + self.max_ids]
                    answers.update(self.reader.segments_many([p.read_id for p in chunk]))
                now = time.time()
                with self.lock:
                    for probe in waiting:
                        if answers.get(probe.read_id, {}).get("probe", 0) >= probe.expiry_ms:
                            probe.seen = now
                            self.pending.pop(probe.person, None)
            time.sleep(self.poll_s)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self._connection.close()


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def produce(
    setup: Setup, pool: list[tuple], prober: Prober, phase: Phase, probes_per_s: float, offset: int
) -> int:
    """Send ``phase.rate`` events/s for ``phase.seconds`` (in slices of 50 ms), a probe among
    them every 1/``probes_per_s`` s; returns where in the pool it stopped."""
    settings, people = setup.settings, setup.people
    producer = rate_producer(settings, **{"compression.type": "lz4"})
    rng = random.Random(int(phase.rate))
    started = time.monotonic()
    next_probe = started
    sent = 0
    while (elapsed := time.monotonic() - started) < phase.seconds:
        due = int(elapsed * phase.rate)
        while sent < due:
            key, value = pool[(offset + sent) % len(pool)]
            producer.produce(settings.topic, value=value, key=key)
            sent += 1
        if time.monotonic() >= next_probe:
            next_probe += 1 / probes_per_s
            probe = _probe(people, prober, rng)
            if probe is not None:
                phase.probes.append(probe)
                prober.add(probe)
                producer.produce(
                    settings.topic,
                    value=_probe_event(probe),
                    key=probe.sent_id.encode(),
                    on_delivery=lambda error, _m, p=probe: _acked(p, error),
                )
                sent += 1
        producer.poll(0)
        time.sleep(0.05)
    producer.flush(60)
    phase.sent = sent
    return offset + sent


def _probe(people: Population, prober: Prober, rng: random.Random) -> Probe | None:
    for _ in range(20):
        person = rng.choice(people.several)
        if not prober.busy(person):
            sent_id, read_id = rng.sample(people.persons[person], 2)
            expiry = time.time_ns() // 1_000_000 + 86_400_000
            return Probe(person, sent_id, read_id, expiry)
    return None


def _probe_event(probe: Probe) -> bytes:
    body = {
        "event_id": f"probe-{probe.person}-{probe.expiry_ms}",
        "app_id": "bench",
        "user_id": probe.sent_id,
        "id_type": "cookie",
        "event_time": _iso(probe.expiry_ms - 86_400_000),
        "event_type": PROBE_TYPE,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def _acked(probe: Probe, error) -> None:
    if error is None:
        probe.acked = time.time()


def run_phase(
    setup: Setup,
    prober: Prober,
    pool: list[tuple],
    rate: float,
    seconds: float,
    args: argparse.Namespace,
    offset: int,
) -> tuple[Phase, int]:
    """Send at ``rate`` for ``seconds``, then wait (at most ``--drain-seconds``) for the last
    probes; the phase's figures and where in the pool the next phase starts."""
    job_pids = [job.pid for job in setup.jobs]
    phase = Phase(rate, seconds)
    load_start = os.getloadavg()[0]
    job_cpu, store_cpu = TreeCpu(*job_pids), TreeCpu(*setup.store_pids)
    broker_cpu = TreeCpu(setup.broker_pid)
    for tree in (job_cpu, store_cpu, broker_cpu):
        tree.sample()
    job_before, store_before = sum(job_cpu.seen.values()), sum(store_cpu.seen.values())
    broker_before = sum(broker_cpu.seen.values())
    bench_before, machine_before = _own_cpu_s(), _machine_cpu()
    sampling = threading.Event()

    def sample_rss() -> None:
        while not sampling.wait(5.0):
            phase.rss_kb.append(sum(rss_kb(pid) for pid in job_pids))

    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()
    offset = produce(setup, pool, prober, phase, args.probes_per_s, offset)
    deadline = time.monotonic() + args.drain_seconds
    while any(p.seen is None for p in phase.probes) and time.monotonic() < deadline:
        time.sleep(0.2)
    sampling.set()
    sampler.join()
    phase.job_cpu_s = job_cpu.stop() - job_before
    phase.store_cpu_s = store_cpu.stop() - store_before
    phase.broker_cpu_s = broker_cpu.stop() - broker_before
    phase.bench_cpu_s = _own_cpu_s() - bench_before
    (busy_after, total_after), (busy_before, total_before) = _machine_cpu(), machine_before
    busy, total = busy_after - busy_before, total_after - total_before
    phase.busy_share = busy / total if total else 0.0
    phase.load = (load_start, os.getloadavg()[0])
    return phase, offset


def _own_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine_cpu() -> tuple[int, int]:
    """``(busy, total)`` clock ticks of every CPU since boot (``/proc/stat``; idle and iowait
    are not busy)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(ticks) - ticks[3] - ticks[4], sum(ticks)


def run_backlog(setup: Setup, pool: list[tuple], count: int, offset: int) -> dict:
    """Wait for the job to catch up, send ``count`` events at once, and measure the job's and
    the store's CPU until the job has committed them all."""
    from profile_store.realtime.live_profiles import DEFAULT_GROUP_ID
    from profile_store.realtime.stream_lag import group_lag

    def caught_up(timeout_s: float) -> float:
        deadline = time.monotonic() + timeout_s
        while group_lag(setup.settings, DEFAULT_GROUP_ID) > 0:
            if time.monotonic() > deadline or setup.job_stopped():
                raise RuntimeError("the live job did not catch up")
            time.sleep(0.5)
        return time.monotonic()

    caught_up(600)
    load_start = os.getloadavg()[0]
    job_cpu = TreeCpu(*(job.pid for job in setup.jobs))
    store_cpu = TreeCpu(*setup.store_pids)
    job_cpu.sample()
    store_cpu.sample()
    job_before, store_before = sum(job_cpu.seen.values()), sum(store_cpu.seen.values())
    started_at = time.monotonic()
    producer = rate_producer(setup.settings, **{"compression.type": "lz4"})
    for n in range(count):
        key, value = pool[(offset + n) % len(pool)]
        while True:
            try:
                producer.produce(setup.settings.topic, value=value, key=key)
                break
            except BufferError:  # the producer's queue is full: let it deliver
                producer.poll(0.05)
        producer.poll(0)
    producer.flush(120)
    seconds = caught_up(1800) - started_at
    job_s = job_cpu.stop() - job_before
    store_s = store_cpu.stop() - store_before
    return {
        "events": count,
        "seconds": round(seconds, 1),
        "job_cpu_s": round(job_s, 1),
        "store_cpu_s": round(store_s, 1),
        "job_cpu_ms_per_event": round(job_s * 1000 / count, 4),
        "store_cpu_ms_per_event": round(store_s * 1000 / count, 4),
        "load_average_start_end": [round(load_start, 1), round(os.getloadavg()[0], 1)],
    }


@contextlib.contextmanager
def store_started(args: argparse.Namespace, data_dir: Path) -> Iterator[tuple[str, int, tuple]]:
    """``(host, port, pids)`` of the store the job writes to: the embedded gateway or, with
    ``--store apache-hbase``, the project's standalone Apache HBase."""
    if args.store == "apache-hbase":
        from profile_store.launchers.apache_hbase import ApacheHBase

        with ApacheHBase(data_dir, heap="2g") as hbase:
            yield "127.0.0.1", hbase.port, hbase.pids
        return
    from profile_store.hbase_gateway.process import EmbeddedGateway

    with EmbeddedGateway(data_dir, server_args=tuple(args.gateway_arg)) as gateway:
        yield gateway.host, gateway.port, (gateway.pid,)


@contextlib.contextmanager
def started(args: argparse.Namespace) -> Iterator[Setup]:
    """The broker, the store holding the persons, and the live job as its own process."""
    import happybase

    from profile_store.event_bus.settings import EventBusSettings
    from profile_store.event_bus.topics import ensure_topic
    from profile_store.lake.storage import LocalLakeStorage
    from profile_store.launchers.kafka_broker import temporary_broker
    from profile_store.profiles.live_cells import day_end_ms
    from profile_store.profiles.rules_in_force import replace_rules_in_force
    from profile_store.profiles.segment_rules import DEFAULT_RULES
    from profile_store.profiles.table import PROFILE_TABLE, ensure_table

    with (
        tempfile.TemporaryDirectory(prefix="bench-live-") as tmp,
        temporary_broker() as broker,
        store_started(args, Path(tmp) / "hbase") as (host, port, store_pids),
    ):
        work = Path(tmp)
        settings = EventBusSettings(broker.bootstrap_servers, "events", args.partitions)
        ensure_topic(settings)
        people = population(args.persons, args.seed)
        yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86_400))
        connection = happybase.Connection(host, port)
        ensure_table(connection)
        loading = time.monotonic()
        cells = load_profiles(connection.table(PROFILE_TABLE), people, day_end_ms(yesterday))
        connection.close()
        print(
            f"{len(people.persons):,} persons, {len(people.ids):,} ids, {cells:,} cells loaded in "
            f"{time.monotonic() - loading:.0f} s",
            flush=True,
        )
        rules = json.dumps([*DEFAULT_RULES, PROBE_RULE])
        replace_rules_in_force(LocalLakeStorage(work / "lake"), rules, "the benchmark's rules")
        logs = [open(work / f"live-{n}.log", "wb") for n in range(args.jobs)]  # noqa: SIM115
        jobs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "profile_store.cli",
                    "stream",
                    "live-profiles",
                    *("--lake", str(work / "lake")),
                    *("--hbase-host", host, "--hbase-port", str(port)),
                ],
                cwd=REPO,
                env={
                    **os.environ,
                    "PYTHONPATH": str(REPO),
                    "PROFILES_KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
                    "PROFILES_KAFKA_TOPIC": settings.topic,
                },
                stderr=log,
            )
            for log in logs
        ]
        setup = Setup(settings, (host, port), store_pids, broker.pid, jobs, people, work)
        try:
            yield setup
        finally:
            for job in jobs:
                job.terminate()
            for job, log in zip(jobs, logs, strict=True):
                job.wait(120)
                log.close()
                lines = Path(log.name).read_text().splitlines()
                print(f"{Path(log.name).stem}:", *lines[-2:], sep="\n  ", flush=True)
                setup.final_summaries += [line for line in lines if STOPPED in line][-1:]


def measure(args: argparse.Namespace) -> int:
    print(
        f"{platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f} at start; seed {args.seed}; store {args.store}",
        flush=True,
    )
    results = {}
    with started(args) as setup:
        pool = event_pool(setup.people, args.pool, args.seed, time.time_ns() // 1_000_000)
        prober = Prober(setup.address, args.poll_ms)
        try:
            warm, offset = run_phase(setup, prober, pool, args.rate, args.warmup_seconds, args, 0)
            print("warm-up", _shown(warm.summary()), flush=True)
            if args.backlog:
                results["backlog"] = run_backlog(setup, pool, args.backlog, offset)
            else:
                run_sustained_and_ramp(setup, prober, pool, offset, args, results)
        finally:
            prober.close()
        assert not setup.job_stopped(), "the live job stopped"
    if args.backlog:
        # The jobs' own counts, from their last lines once they stopped.
        results["backlog"].update(writes_per_event(setup.final_summaries))
        print("backlog", json.dumps(results["backlog"]), flush=True)
    else:
        print(f"load average {os.getloadavg()[0]:.1f} at the end", flush=True)
        _print_tables(results, args)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))
    return 0


def run_sustained_and_ramp(setup, prober, pool, offset: int, args, results: dict) -> None:
    sustained, offset = run_phase(setup, prober, pool, args.rate, args.seconds, args, offset)
    results["sustained"] = sustained.summary()
    print("sustained", _shown(results["sustained"]), flush=True)
    if args.ramp:
        results["ramp"] = []
        rate = args.rate + args.ramp_step
        while True:
            step, offset = run_phase(setup, prober, pool, rate, args.ramp_seconds, args, offset)
            summary = step.summary()
            results["ramp"].append(summary)
            print("ramp", _shown(summary), flush=True)
            if not _meets(summary, args.bar_ms) or setup.job_stopped():
                break
            rate += args.ramp_step


STOPPED = "live profiles stopped:"
_APPLIED = re.compile(r"([\d,]+) events applied")
_WRITTEN = re.compile(r"([\d,]+) row writes, ([\d,]+) cells")


def writes_per_event(summaries: list[str]) -> dict:
    """Row writes and cells per applied event over the jobs' whole lives (warm-up included:
    the same traffic, so the same ratio), from each job's last summary line."""
    applied = rows = cells = 0
    for line in summaries:
        applied += int(_APPLIED.search(line).group(1).replace(",", ""))
        written = _WRITTEN.search(line)
        rows += int(written.group(1).replace(",", ""))
        cells += int(written.group(2).replace(",", ""))
    if not applied:
        return {"row_writes_per_event": None, "cells_per_event": None}
    return {
        "events_applied": applied,
        "row_writes_per_event": round(rows / applied, 3),
        "cells_per_event": round(cells / applied, 3),
    }


def _shown(summary: dict) -> str:
    """A phase's figures on one line, without the probe timeline (in ``--out`` only)."""
    return json.dumps({k: v for k, v in summary.items() if k != "probe_timeline"})


def _meets(row: dict, bar_ms: float) -> bool:
    """Every probe seen, and p99 within the bar."""
    return row["probes_seen"] == row["probes"] and (row["p99_ms"] or float("inf")) <= bar_ms


CPU_COLUMNS = ("job_cpu_s", "store_cpu_s", "broker_cpu_s", "bench_cpu_s")


def _print_tables(results: dict, args: argparse.Namespace) -> None:
    print(
        "\n| rate /s | seconds | probes seen | p50 ms | p99 ms | max ms | job RSS MB first / last "
        "/ max | CPU s: job / store / Kafka / producer+prober | machine busy % "
        "| load avg start / end |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = [results["sustained"], *results.get("ramp", [])]
    for row in rows:
        latency = [
            f"{row[k]:,.0f}" if row[k] is not None else "-" for k in ("p50_ms", "p99_ms", "max_ms")
        ]
        cells = [
            f"{row['rate']:,.0f}",
            f"{row['seconds']:.0f}",
            f"{row['probes_seen']} / {row['probes']}",
            *latency,
            " / ".join(f"{x:.0f}" for x in row["rss_mb_first_last_max"]),
            " / ".join(f"{row[k]:.0f}" for k in CPU_COLUMNS),
            f"{row['machine_busy_percent']:.0f}",
            " / ".join(f"{x:.1f}" for x in row["load_average_start_end"]),
        ]
        print("| " + " | ".join(cells) + " |")
    if "ramp" in results:
        met = [row["rate"] for row in rows if _meets(row, args.bar_ms)]
        print(f"\nhighest rate with p99 <= {args.bar_ms:,.0f} ms: {max(met) if met else 0:,.0f}/s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rate", type=float, default=5_000, help="events/s (default 5,000)")
    parser.add_argument("--seconds", type=float, default=600, help="sustained phase (default 600)")
    parser.add_argument("--warmup-seconds", type=float, default=30)
    parser.add_argument("--persons", type=int, default=50_000)
    parser.add_argument("--pool", type=int, default=200_000, help="distinct events sent in turn")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--probes-per-s", type=float, default=5.0)
    parser.add_argument("--poll-ms", type=float, default=50.0)
    parser.add_argument("--drain-seconds", type=float, default=60.0)
    parser.add_argument("--ramp", action="store_true", help="then raise the rate until the bar")
    parser.add_argument("--ramp-step", type=float, default=2_500)
    parser.add_argument("--ramp-seconds", type=float, default=90)
    parser.add_argument("--bar-ms", type=float, default=5_000)
    parser.add_argument(
        "--store",
        choices=("gateway", "apache-hbase"),
        default="gateway",
        help="where the profiles live: the embedded gateway (default) or Apache HBase",
    )
    parser.add_argument(
        "--gateway-arg",
        action="append",
        default=[],
        help="an hbase-gateway option for the gateway (repeat: --gateway-arg=--workers=1)",
    )
    parser.add_argument(
        "--backlog", type=int, default=0, help="after the warm-up: CPU per event over N events"
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="live-profiles processes sharing the partitions in one consumer group (default 1)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", help="write the results as JSON here too")
    return measure(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
