"""The collector against the real broker: ``profiles serve`` processes taking ``POST /v1/events``,
Kafka, the lake sink, and ``profiles send``."""

from __future__ import annotations

import gzip
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from landing_files import drive, landed

from profile_store.event_bus.producer import EventProducer
from profile_store.event_bus.settings import EventBusSettings
from profile_store.event_bus.topics import ensure_topic
from profile_store.lake.storage import LocalLakeStorage
from profile_store.realtime.collector import EventCollector
from profile_store.realtime.lake_sink import LakeSink, LakeSinkConfig
from profile_store.service.routes.events import MAX_BODY_BYTES

REPO = Path(__file__).resolve().parents[2]
SHOP_KEY = "shop-key-0123456789abcdef"
RIVAL_KEY = "rival-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
TENANTS = {
    "tenants": [
        {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]},
        {"name": "rival", "api_keys": [RIVAL_KEY], "app_ids": ["com.rival"]},
    ],
    "admin_api_keys": [ADMIN_KEY],
}
NDJSON = {"Content-Type": "application/x-ndjson"}


def event(event_id: str, **changes: object) -> dict:
    return {
        "event_id": event_id,
        "app_id": "com.shop",
        "user_id": f"user-{event_id}",
        "id_type": "cookie",
        "event_time": "2026-11-01T10:00:00Z",
        "event_type": "open",
        **changes,
    }


def lines(*events: dict | bytes) -> bytes:
    return b"\n".join(e if isinstance(e, bytes) else json.dumps(e).encode() for e in events)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


START_BOUND_S = 180  # only against hanging forever: the machine may be loaded


def start_serve(
    command: list[str], log: Path, env: dict[str, str], processes: list[subprocess.Popen]
) -> str:
    """Start a serve command; its URL once uvicorn listens."""
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, env=env)
    processes.append(process)
    deadline = time.monotonic() + START_BOUND_S
    while time.monotonic() < deadline:
        match = re.search(r"Uvicorn running on (http://\S+)", log.read_text())
        if match:
            return match.group(1)
        assert process.poll() is None, log.read_text()
        time.sleep(0.1)
    raise AssertionError(f"serve did not start:\n{log.read_text()}")


def serve_command(tenants: Path, gateway, *flags: str) -> list[str]:
    command = [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
    command += ["--tenants", str(tenants)]
    command += ["--hbase-host", gateway.host, "--hbase-port", str(gateway.port), *flags]
    return command


def serve_env(bus: EventBusSettings | None, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILES_KAFKA_")}
    if bus is not None:
        env["PROFILES_KAFKA_BOOTSTRAP_SERVERS"] = bus.bootstrap_servers
        env["PROFILES_KAFKA_TOPIC"] = bus.topic
    return {**env, **more}


@pytest.fixture
def collector(builder_gateway, tmp_path) -> Iterator[Callable[..., tuple[str, Path]]]:
    """Start ``profiles serve`` (over the session's builder gateway) with the collector on a
    bus (None: Kafka not configured); returns (URL, log path)."""
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(TENANTS))
    processes: list[subprocess.Popen] = []

    def start(bus: EventBusSettings | None, *flags: str, **env: str) -> tuple[str, Path]:
        log = tmp_path / f"serve-{len(processes)}.log"
        command = serve_command(tenants, builder_gateway, *flags)
        return start_serve(command, log, serve_env(bus, **env), processes), log

    yield start
    for process in processes:
        process.kill()
        process.wait()


@pytest.fixture(scope="module")
def shared(kafka_broker, builder_gateway, tmp_path_factory) -> Iterator[str]:
    """One service on one topic for the tests that only read answers; its URL."""
    directory = tmp_path_factory.mktemp("shared-collector")
    tenants = directory / "tenants.json"
    tenants.write_text(json.dumps(TENANTS))
    bus = EventBusSettings(
        bootstrap_servers=kafka_broker.bootstrap_servers, topic="collector-shared", partitions=2
    )
    ensure_topic(bus)
    processes: list[subprocess.Popen] = []
    command = serve_command(tenants, builder_gateway)
    yield start_serve(command, directory / "serve.log", serve_env(bus), processes)
    for process in processes:
        process.kill()
        process.wait()


def sink_until(bus: EventBusSettings, storage: LocalLakeStorage, count: int) -> list[bytes]:
    """Run the lake sink until the lake holds ``count`` lines; every landed line."""
    config = LakeSinkConfig(group_id=f"sink-{bus.topic}", flush_seconds=0.5)
    sink = LakeSink(bus, storage, config).start()
    try:
        drive(sink.step, lambda: sum(map(len, landed(storage).values())) >= count)
        sink.flush()
        return [line for day in landed(storage).values() for line in day]
    finally:
        sink.close()


def test_accepted_events_land_in_the_lake_exactly_once(collector, bus, tmp_path):
    url, _ = collector(bus)
    sent = [event(f"e{i}") for i in range(20)]
    sent.append(event("idfa-1", user_id="ab12cd34-0000-4000-8000-00000000abcd", id_type="idfa"))
    body = lines(*sent, event("bad", user_id=""))
    answer = httpx.post(f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": SHOP_KEY})
    assert answer.status_code == 202, answer.text
    assert answer.json() == {
        "accepted": 21,
        "rejected": [{"index": 21, "reason": "missing_user_id"}],
    }

    storage = LocalLakeStorage(tmp_path / "sunk")
    landed_events = [json.loads(line) for line in sink_until(bus, storage, 21)]
    assert sorted(e["event_id"] for e in landed_events) == sorted(e["event_id"] for e in sent)
    idfa = next(e for e in landed_events if e["event_id"] == "idfa-1")
    assert idfa["user_id"] == "AB12CD34-0000-4000-8000-00000000ABCD"  # ingest's spelling


def test_concurrent_requests_are_checked_in_turn_and_await_kafka_together(bus, monkeypatch):
    """The checks hold the interpreter's lock anyway: interleaved, they cost more CPU for no
    more events. The waits for Kafka's acknowledgements must still overlap: four requests each
    waiting until all four wait would deadlock (a broken barrier) if they waited in turn."""
    producer = EventProducer(bus)
    collector = EventCollector(producer)
    checking, most_checking = 0, 0
    checked = collector._checked

    def counted(*args):
        nonlocal checking, most_checking
        checking += 1
        most_checking = max(most_checking, checking)
        time.sleep(0.05)  # long enough for another request to try to start its checks
        try:
            return checked(*args)
        finally:
            checking -= 1

    all_waiting = threading.Barrier(4, timeout=30)
    awaited = producer.await_delivery
    monkeypatch.setattr(collector, "_checked", counted)
    monkeypatch.setattr(producer, "await_delivery", lambda p: all_waiting.wait() or awaited(p))
    bodies = [[lines(event(f"r{r}-{i}")) for i in range(50)] for r in range(4)]
    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda body: collector.collect(body, None), bodies))
    producer.close()
    assert [answer.accepted for answer in answers] == [50, 50, 50, 50]
    assert most_checking == 1


def test_one_json_event_is_accepted(shared):
    url = shared
    answer = httpx.post(f"{url}/v1/events", json=event("one"), headers={"X-API-Key": SHOP_KEY})
    assert answer.status_code == 202, answer.text
    assert answer.json() == {"accepted": 1, "rejected": []}


def test_rejected_lines_come_back_with_their_index_and_quarantine_reason(shared):
    url = shared
    body = lines(
        event("a"),
        b"not json",
        event("c", id_type="email"),
        b"",
        event("e", event_time="yesterday"),
        event("f", color="red"),
    )
    answer = httpx.post(f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": SHOP_KEY})
    assert answer.status_code == 202
    assert answer.json()["rejected"] == [
        {"index": 1, "reason": "malformed_record"},
        {"index": 2, "reason": "invalid_id_type"},
        {"index": 4, "reason": "unparseable_event_time"},
        {"index": 5, "reason": "unknown_field"},
    ]


def test_a_body_of_rejected_lines_only_is_422_with_the_list(shared):
    url = shared
    body = lines(event("a", event_type=" "), b"[1]")
    answer = httpx.post(f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": SHOP_KEY})
    assert answer.status_code == 422
    assert answer.json()["error"] == "no_event_accepted"
    assert answer.json()["rejected"] == [
        {"index": 0, "reason": "empty_event_type"},
        {"index": 1, "reason": "not_an_object"},
    ]


def test_a_body_over_the_bound_is_413_before_it_is_read(shared):
    url = shared
    body = b"x" * (MAX_BODY_BYTES + 1)
    answer = httpx.post(f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": SHOP_KEY})
    assert answer.status_code == 413
    assert answer.json()["error"] == "body_too_large"


def test_a_tenant_may_send_only_its_own_apps(shared):
    url = shared
    body = lines(event("mine"), event("theirs", app_id="com.rival"))
    answer = httpx.post(f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": SHOP_KEY})
    assert answer.status_code == 202
    assert answer.json() == {
        "accepted": 1,
        "rejected": [{"index": 1, "reason": "app_not_allowed", "app_id": "com.rival"}],
    }
    admin = httpx.post(f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": ADMIN_KEY})
    assert admin.json() == {"accepted": 2, "rejected": []}


def test_kafka_unreachable_is_503_with_retry_after_and_nothing_accepted(collector, bus):
    down = EventBusSettings(bootstrap_servers=f"127.0.0.1:{closed_port()}", topic=bus.topic)
    url, log = collector(
        down, "--metrics-port", "0", PROFILES_COLLECTOR_DELIVERY_TIMEOUT_SECONDS="2"
    )
    body = lines(event("a"), event("b"), b"not json")
    answer = httpx.post(
        f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": SHOP_KEY}, timeout=60
    )
    assert answer.status_code == 503
    assert answer.headers["retry-after"] == "5"
    assert answer.json()["error"] == "kafka_unavailable"
    assert "0 written before the failure" in answer.json()["message"]
    metrics = scrape(log)
    assert sample(metrics, "profiles_collector_undelivered_events_total") == 2
    assert sample(metrics, "profiles_collector_accepted_events_total") == 0


def test_without_kafka_configured_the_route_is_503_kafka_not_configured(collector):
    url, _ = collector(None)
    answer = httpx.post(f"{url}/v1/events", json=event("a"), headers={"X-API-Key": SHOP_KEY})
    assert answer.status_code == 503
    assert answer.json()["error"] == "kafka_not_configured"
    assert "retry-after" in answer.headers
    rejected = httpx.post(
        f"{url}/v1/events", content=b"[]", headers={**NDJSON, "X-API-Key": SHOP_KEY}
    )
    assert rejected.status_code == 422  # still checked


def scrape(log: Path) -> str:
    port = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", log.read_text()).group(1)
    return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text


def sample(metrics: str, name: str, **labels: str) -> float:
    for line in metrics.splitlines():
        parsed = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
        if parsed is None or parsed.group(1) != name:
            continue
        if dict(re.findall(r'(\w+)="([^"]*)"', parsed.group(2) or "")) == labels:
            return float(parsed.group(3))
    raise AssertionError(f"no sample {name} {labels}")


def test_the_metrics_count_accepted_and_rejected_events_and_the_delivery_time(collector, bus):
    url, log = collector(bus, "--metrics-port", "0")
    body = lines(event("a"), event("b"), b"x", event("d", app_id="com.rival"))
    answer = httpx.post(f"{url}/v1/events", content=body, headers={**NDJSON, "X-API-Key": SHOP_KEY})
    assert answer.status_code == 202
    metrics = scrape(log)
    assert sample(metrics, "profiles_collector_accepted_events_total") == 2
    rejected = "profiles_collector_rejected_events_total"
    assert sample(metrics, rejected, reason="malformed_record") == 1
    assert sample(metrics, rejected, reason="app_not_allowed") == 1
    assert sample(metrics, "profiles_collector_kafka_delivery_seconds_count") == 1


def test_profiles_send_replays_a_generated_landing_file(collector, bus, tmp_path):
    from profile_store.generator.lake import generate_lake

    generate_lake(tmp_path / "generated", days=1, events_per_day=3000, seed=3)
    files = sorted((tmp_path / "generated" / "landing").rglob("*.jsonl.gz"))
    all_lines = [line for f in files for line in gzip.decompress(f.read_bytes()).splitlines()]
    url, _ = collector(bus)
    command = [sys.executable, "-m", "profile_store.cli", "send", *map(str, files)]
    command += ["--url", url, "--key", ADMIN_KEY, "--batch-lines", "500", "--json"]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["lines"] == len(all_lines)
    assert report["accepted"] + report["rejected"] == len(
        [line for line in all_lines if line.strip()]
    )
    assert report["rejected"] > 0  # the generator writes malformed lines
    assert set(report["rejected_by_reason"]) <= {
        "malformed_record",
        "not_an_object",
        "unknown_field",
        "wrong_type",
        "missing_event_id",
        "missing_app_id",
        "missing_user_id",
        "invalid_id_type",
        "empty_event_type",
        "unparseable_event_time",
        "oversized_attributes",
    }
    storage = LocalLakeStorage(tmp_path / "sunk")
    assert len(sink_until(bus, storage, report["accepted"])) == report["accepted"]


def test_profiles_send_with_a_refused_key_exits_2(collector, bus, tmp_path):
    url, _ = collector(bus)
    file = tmp_path / "events.jsonl"
    file.write_bytes(lines(event("a")))
    command = [sys.executable, "-m", "profile_store.cli", "send", str(file), "--url", url]
    done = subprocess.run(
        [*command, "--key", "unknown-key-0123456789"], cwd=REPO, capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "the key was refused (401)" in done.stderr
