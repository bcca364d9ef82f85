"""The collector's throughput: one ``profiles serve`` process taking ``POST /v1/events``.

Everything runs here for real: the project's Kafka broker, an embedded HBase gateway (the
service needs one; the collector does not touch it) and ``profiles serve`` as its own process,
uvicorn's single worker. ``--clients`` threads of this process send JSON-lines bodies of
``--batch`` generated events each (distinct events: ids, times and attributes vary) for
``--seconds`` after ``--warmup-seconds``; each request is answered only once the broker
acknowledged every accepted event (``acks=all``, idempotent producer). Printed: the accepted
events/s, the requests' p50 / p99 latency, and CPU per event of the service, of the broker and
of this process (the load generator), each apart, with the machine's load average::

    .venv/bin/python bench/collector.py                       # 60 s, 4 clients, 500-event bodies
    .venv/bin/python bench/collector.py --clients 8 --seconds 120

The bar (issue of the live path): one process accepting >= 20,000 events/s in 500-event bodies.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)
from realtime_engines import TreeCpu  # noqa: E402

from profile_store.event_bus.settings import EventBusSettings  # noqa: E402
from profile_store.event_bus.topics import ensure_topic  # noqa: E402
from profile_store.hbase_gateway.process import EmbeddedGateway  # noqa: E402
from profile_store.launchers.child_processes import free_port  # noqa: E402
from profile_store.launchers.kafka_broker import KafkaBroker  # noqa: E402

API_KEY = "bench-key-0123456789abcdef"
TENANTS = {"tenants": [{"name": "bench", "api_keys": [API_KEY], "app_ids": ["com.bench"]}]}
EVENT_TYPES = ("open", "view", "add_to_cart", "purchase")
ID_TYPES = ("cookie", "idfa", "gaid")


def bodies(count: int, batch: int, seed: int) -> list[bytes]:
    """``count`` bodies of ``batch`` distinct events each, as a tracker sends them."""
    rng = random.Random(seed)
    out = []
    for b in range(count):
        lines = []
        for i in range(batch):
            user = rng.randrange(200_000)
            lines.append(
                json.dumps(
                    {
                        "event_id": f"e-{seed}-{b}-{i}",
                        "app_id": "com.bench",
                        "user_id": f"u{user:07d}",
                        "id_type": ID_TYPES[user % 3],
                        "event_time": f"2026-11-01T{rng.randrange(24):02d}:"
                        f"{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}Z",
                        "event_type": rng.choice(EVENT_TYPES),
                        "event_attributes": {"country": rng.choice(("de", "fr", "us", "jp"))},
                    },
                    separators=(",", ":"),
                )
            )
        out.append("\n".join(lines).encode())
    return out


@dataclass
class Tally:
    accepted: int = 0
    requests: int = 0
    errors: list[str] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def client(url: str, payloads: list[bytes], start: int, stop: threading.Event, tally: Tally):
    """One keep-alive connection sending the bodies in turn until ``stop``."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
    headers = {"Content-Type": "application/x-ndjson", "X-API-Key": API_KEY}
    i = start
    while not stop.is_set():
        body = payloads[i % len(payloads)]
        i += 1
        sent = time.perf_counter()
        connection.request("POST", "/v1/events", body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        took = time.perf_counter() - sent
        with tally.lock:
            tally.requests += 1
            tally.latencies.append(took)
            if answer.status == 202:
                tally.accepted += json.loads(data)["accepted"]
            else:
                tally.errors.append(f"{answer.status} {data[:200]!r}")
    connection.close()


def start_serve(work: Path, gateway: EmbeddedGateway, bus: EventBusSettings):
    tenants = work / "tenants.json"
    tenants.write_text(json.dumps(TENANTS))
    log = work / "serve.log"
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("PROFILES_KAFKA_")},
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
        "PROFILES_KAFKA_TOPIC": bus.topic,
        "PROFILES_LAKE_ROOT": str(work / "lake"),
    }
    port = free_port()
    # Warnings only: uvicorn's access line per request would be the service's own cost.
    command = [sys.executable, "-m", "profile_store.cli", "serve", "--port", str(port)]
    command += ["--tenants", str(tenants), "--log-level", "warning"]
    command += ["--hbase-host", gateway.host, "--hbase-port", str(gateway.port)]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"profiles serve did not start:\n{log.read_text()[-3000:]}")


def run(args: argparse.Namespace) -> int:
    print(f"generating {args.bodies} bodies of {args.batch} events (seed {args.seed}) ...")
    payloads = bodies(args.bodies, args.batch, args.seed)
    with tempfile.TemporaryDirectory(prefix="bench-collector-") as tmp:
        work = Path(tmp)
        broker = KafkaBroker(work / "kafka").start()
        try:
            bus = EventBusSettings(
                bootstrap_servers=broker.bootstrap_servers,
                topic="bench-events",
                partitions=args.partitions,
            )
            ensure_topic(bus)
            with EmbeddedGateway(work / "hbase") as gateway:
                serve, url = start_serve(work, gateway, bus)
                try:
                    return measure(args, url, payloads, serve.pid, broker.pid)
                finally:
                    serve.terminate()
                    serve.wait(timeout=60)
        finally:
            broker.kill()


def measure(args, url: str, payloads: list[bytes], serve_pid: int, broker_pid: int) -> int:
    stop = threading.Event()
    tally = Tally()
    threads = [
        threading.Thread(target=client, args=(url, payloads, i * 7, stop, tally), daemon=True)
        for i in range(args.clients)
    ]
    for thread in threads:
        thread.start()
    time.sleep(args.warmup_seconds)
    serve_cpu, broker_cpu = TreeCpu(serve_pid), TreeCpu(broker_pid)
    own = resource.getrusage(resource.RUSAGE_SELF)
    load_start = os.getloadavg()[0]
    with tally.lock:
        accepted0, requests0, latencies0 = tally.accepted, tally.requests, len(tally.latencies)
    started = time.monotonic()
    time.sleep(args.seconds)
    with tally.lock:
        accepted = tally.accepted - accepted0
        requests = tally.requests - requests0
        latencies = np.array(tally.latencies[latencies0:])
    elapsed = time.monotonic() - started
    serve_s, broker_s = serve_cpu.stop(), broker_cpu.stop()
    after = resource.getrusage(resource.RUSAGE_SELF)
    own_s = (after.ru_utime + after.ru_stime) - (own.ru_utime + own.ru_stime)
    stop.set()
    for thread in threads:
        thread.join(timeout=120)
    load_end = os.getloadavg()[0]

    print(f"Machine: {machine()}")
    print(
        f"{args.clients} clients, {args.batch}-event bodies, {args.partitions} partitions, "
        f"{args.seconds:.0f} s after {args.warmup_seconds:.0f} s of warm-up; load average "
        f"(1 min) {load_start:.1f} at the start, {load_end:.1f} at the end"
    )
    if tally.errors:
        print(f"{len(tally.errors)} requests not accepted, e.g. {tally.errors[:3]}")
    rate = accepted / elapsed
    per_event = 1000 / accepted if accepted else float("nan")
    print()
    print(
        "| accepted events/s | requests/s | request p50 | request p99 | service CPU ms/event |"
        " broker CPU ms/event | load generator CPU ms/event |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    p50, p99 = (np.percentile(latencies, q) * 1000 for q in (50, 99))
    print(
        f"| {rate:,.0f} | {requests / elapsed:,.1f} | {p50:,.0f} ms | {p99:,.0f} ms | "
        f"{serve_s * per_event:.4f} | {broker_s * per_event:.4f} | {own_s * per_event:.4f} |"
    )
    print()
    verdict = "met" if rate >= 20_000 else "NOT met"
    print(f"Bar (>= 20,000 accepted events/s in one process): {verdict}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--warmup-seconds", type=float, default=10)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=500, help="events per body (default 500)")
    parser.add_argument("--bodies", type=int, default=200, help="distinct bodies sent in turn")
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--seed", type=int, default=7)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
