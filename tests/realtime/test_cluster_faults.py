"""Faults of a cluster under the running real-time path, each process a real one.

* A broker of three (``KafkaCluster``: replication factor 3, ``min.insync.replicas`` 2) killed
  with SIGKILL while ``profiles serve`` takes events, ``profiles stream lake-sink`` lands them
  and ``profiles stream live-profiles`` applies them, then started again: every event answered
  202 is in the lake exactly once and counted exactly once in the live rows, none refused is.
* Apache HBase stopped and started again on its port while the live job writes to it: the job
  applies its batches again until HBase answers, and every event is counted exactly once.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
from collections import Counter
from pathlib import Path

import happybase
import httpx
import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType
from landing_files import drive, landed
from live_rows import expected_counter, lake_with_rules, message, recent_ms, table_opener, yesterday
from stream_processes import Commands

from profile_store.event_bus.producer import EventProducer
from profile_store.event_bus.settings import EventBusSettings
from profile_store.event_bus.topics import ensure_topic
from profile_store.lake.layout import SUCCESS_MARKER, landing_day
from profile_store.lake.storage import LocalLakeStorage
from profile_store.launchers.apache_hbase import ApacheHBase
from profile_store.launchers.kafka_cluster import KafkaCluster
from profile_store.profiles.live_cells import day_end_ms
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.table import ensure_table

SHOP_KEY = "fault-shop-key-0123456789"
EVENT_TYPES = ("click", "purchase", "view_item", "open")
DRAIN_BOUND_S = 300  # only against hanging forever


def cluster_bus(cluster: KafkaCluster, topic: str) -> EventBusSettings:
    return EventBusSettings.from_env(
        {**cluster.environment(), "PROFILES_KAFKA_TOPIC": topic, "PROFILES_KAFKA_PARTITIONS": "3"}
    )


def stream_env(bus: EventBusSettings, **more: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILES_KAFKA_")}
    return {
        **env,
        **more,
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
        "PROFILES_KAFKA_TOPIC": bus.topic,
    }


def live_args(tmp_path: Path, host: str, port: int, prefix: str, group: str) -> list[str]:
    return [
        *("stream", "live-profiles", "--lake", lake_with_rules(tmp_path / "lake")),
        *("--group-id", group),
        *("--hbase-host", host, "--hbase-port", str(port), "--hbase-table-prefix", prefix),
    ]


def counters(reader: ProfileReader, users: list[str], now_ms: int) -> dict[str, dict[str, float]]:
    views = {user: reader.profile(user, now_ms=now_ms) for user in users}
    return {user: dict(view.counters) if view else {} for user, view in views.items()}


def expected_counters(
    sent: list[tuple[bytes, bytes]], users: list[str], now_ms: int
) -> dict[str, dict[str, float]]:
    expected: dict[str, dict[str, float]] = {}
    for user in users:
        own = [m for m in sent if m[0] == user.encode()]
        expected[user] = {
            kind: value
            for kind in EVENT_TYPES
            if (value := expected_counter(own, kind, now_ms)) > 0
        }
    return expected


def counted_exactly(
    found: dict[str, dict[str, float]], expected: dict[str, dict[str, float]]
) -> bool:
    return found.keys() == expected.keys() and all(
        found[user].keys() == expected[user].keys()
        and all(found[user][k] == pytest.approx(v, rel=1e-9) for k, v in expected[user].items())
        for user in expected
    )


def event_ids(lines: list[bytes]) -> Counter:
    return Counter(json.loads(line)["event_id"] for line in lines)


def day_closed_after_its_files(lake: Path, day: str) -> bool:
    """``_SUCCESS`` written after the day's last data file."""
    folder = lake / landing_day(day)
    marker = folder / SUCCESS_MARKER
    files = [f for f in folder.glob("*.jsonl.gz")] if folder.exists() else []
    return marker.exists() and all(f.stat().st_mtime_ns <= marker.stat().st_mtime_ns for f in files)


# --- the events topic on a cluster --------------------------------------------------------------


def test_on_three_brokers_the_events_topic_has_three_replicas_and_acknowledges_with_two(
    kafka_cluster,
):
    bus = cluster_bus(kafka_cluster, f"replicated-{os.getpid()}")
    ensure_topic(bus)

    admin = AdminClient({"bootstrap.servers": bus.bootstrap_servers})
    partitions = admin.list_topics(bus.topic, timeout=30).topics[bus.topic].partitions
    resource = ConfigResource(ResourceType.TOPIC, bus.topic)
    configs = admin.describe_configs([resource])[resource].result(timeout=30)
    assert [len(p.replicas) for p in partitions.values()] == [3, 3, 3]
    assert configs["min.insync.replicas"].value == "2"


# --- a broker killed under the collector, the sink and the live job -----------------------------


def requests_of(users: list[str], day: str, requests: int, size: int) -> list[list]:
    """``requests`` bodies of ``size`` events each, of ``day``, spread over ``users``."""
    rng = random.Random(day)
    noon = day_end_ms(day) - 12 * 3600 * 1000
    return [
        [
            message(f"r{r}e{i}", rng.choice(users), noon + r * size + i, rng.choice(EVENT_TYPES))
            for i in range(size)
        ]
        for r in range(requests)
    ]


def test_a_broker_killed_under_the_path_loses_and_repeats_no_accepted_event(
    kafka_cluster, gateway, tmp_path
):
    bus = cluster_bus(kafka_cluster, f"broker-kill-{os.getpid()}")
    ensure_topic(bus)
    prefix = f"kill{os.getpid()}"
    connection = happybase.Connection(**gateway.connection_kwargs())
    ensure_table(connection, f"{prefix}_profiles")
    tenants = tmp_path / "tenants.json"
    tenants.write_text(
        json.dumps({"tenants": [{"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["shop"]}]})
    )
    lake = tmp_path / "lake"
    day = yesterday()
    users = [f"kill-u{i}" for i in range(5)]
    bodies = requests_of(users, day, requests=30, size=10)
    admin = AdminClient({"bootstrap.servers": bus.bootstrap_servers})
    leader = admin.list_topics(bus.topic, timeout=30).topics[bus.topic].partitions[0].leader
    victim = kafka_cluster.nodes[leader - 1]
    commands = Commands(tmp_path, stream_env(bus, **kafka_cluster.environment()))
    accepted: list[tuple[bytes, bytes]] = []
    refused: list[tuple[bytes, bytes]] = []
    accepted_while_down = 0
    try:
        hbase = ("--hbase-host", gateway.host, "--hbase-port", str(gateway.port))
        url = commands.serve("serve", "--tenants", str(tenants), *hbase)
        commands.start(
            "sink",
            *("stream", "lake-sink", "--lake", str(lake), "--group-id", f"sink-{bus.topic}"),
            *("--lateness-seconds", "0", "--flush-seconds", "0.5"),
        )
        commands.start(
            "live", *live_args(tmp_path, gateway.host, gateway.port, prefix, f"live-{bus.topic}")
        )
        for number, body in enumerate(bodies):
            if number == 10:
                victim.kill()
            if number == 20:
                victim.start()
            answer = httpx.post(
                f"{url}/v1/events",
                content=b"\n".join(value for _key, value in body),
                headers={"Content-Type": "application/x-ndjson", "X-API-Key": SHOP_KEY},
                timeout=120,
            )
            if answer.status_code == 202:
                accepted += body
                accepted_while_down += not victim.running
            else:
                refused += body

        storage = LocalLakeStorage(lake)
        reader = ProfileReader(table_opener(connection, f"{prefix}_profiles"))
        wanted = Counter(json.loads(value)["event_id"] for _key, value in accepted)

        def drained() -> bool:
            assert commands.running("sink"), commands.log("sink")
            assert commands.running("live"), commands.log("live")
            now = recent_ms(0)
            return (
                event_ids(landed(storage).get(day, [])) == wanted
                and day_closed_after_its_files(lake, day)
                and counted_exactly(
                    counters(reader, users, now), expected_counters(accepted, users, now)
                )
            )

        drive(lambda: time.sleep(0.5), drained, timeout=DRAIN_BOUND_S)
        sink_exit, live_exit = commands.stop("sink"), commands.stop("live")
    finally:
        commands.close()
        if not victim.running:
            victim.start()

    assert sink_exit == 0, commands.log("sink")
    assert live_exit == 0, commands.log("live")
    assert accepted_while_down > 0, "the collector accepted events while a broker was down"
    now = recent_ms(0)
    assert event_ids(landed(storage)[day]) == wanted  # each accepted event once, no other
    assert day_closed_after_its_files(lake, day)
    found, expected = counters(reader, users, now), expected_counters(accepted, users, now)
    connection.close()
    assert counted_exactly(found, expected), (found, expected, f"{len(refused)} events refused")


# --- Apache HBase restarted under the live job --------------------------------------------------


class Sender:
    """Sends a few events every half second from a thread until stopped (bounded), keeping
    what Kafka acknowledged."""

    def __init__(self, bus: EventBusSettings, users: list[str], most_batches: int = 400) -> None:
        self.bus = bus
        self.users = users
        self.most_batches = most_batches
        self.sent: list[tuple[bytes, bytes]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def __enter__(self) -> Sender:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(120)

    def _run(self) -> None:
        rng = random.Random(7)
        with EventProducer(self.bus) as producer:
            for batch in range(self.most_batches):
                if self._stop.is_set():
                    return
                at, users, kinds = recent_ms(60), self.users, EVENT_TYPES
                messages = [
                    message(f"h{batch}e{i}", rng.choice(users), at + i, rng.choice(kinds))
                    for i in range(5)
                ]
                producer.send(messages)
                self.sent += messages
                time.sleep(0.5)


def reachable_counters(hbase: ApacheHBase, table: str, users: list[str], now_ms: int):
    """The live counters, or None while HBase does not answer."""
    try:
        connection = happybase.Connection(**hbase.connection_kwargs(), timeout=10_000)
    except Exception:
        return None
    try:
        return counters(ProfileReader(table_opener(connection, table)), users, now_ms)
    except Exception:
        return None
    finally:
        connection.close()


def test_apache_hbase_restarted_under_the_live_job_loses_and_repeats_no_event(bus, tmp_path):
    hbase = ApacheHBase(tmp_path / "hbase").start()
    commands = Commands(tmp_path, stream_env(bus))
    users = [f"hb-u{i}" for i in range(4)]
    table = "restart_profiles"
    try:
        connection = happybase.Connection(**hbase.connection_kwargs())
        ensure_table(connection, table)
        connection.close()
        commands.start(
            "live",
            *live_args(tmp_path, "127.0.0.1", hbase.port, "restart", f"live-{bus.topic}"),
            *("--hbase-retry-seconds", "600"),
        )
        with Sender(bus, users) as sender:

            def some_applied() -> bool:
                found = reachable_counters(hbase, table, users, recent_ms(0))
                return bool(found) and any(found.values())

            drive(lambda: time.sleep(0.5), some_applied)
            port = hbase.port
            hbase.restart()
            assert hbase.port == port
            sent_after_restart = len(sender.sent)
            drive(lambda: time.sleep(0.5), lambda: len(sender.sent) >= sent_after_restart + 20)
        sent = list(sender.sent)

        def applied() -> bool:
            assert commands.running("live"), commands.log("live")
            now = recent_ms(0)
            found = reachable_counters(hbase, table, users, now)
            return found is not None and counted_exactly(found, expected_counters(sent, users, now))

        drive(lambda: time.sleep(0.5), applied, timeout=DRAIN_BOUND_S)
        live_exit = commands.stop("live")
        now = recent_ms(0)
        found = reachable_counters(hbase, table, users, now)
    finally:
        commands.close()
        hbase.stop(graceful=False)

    assert live_exit == 0, commands.log("live")
    assert "applying the batch again" in commands.log("live"), "the job met the outage"
    expected = expected_counters(sent, users, now)
    assert found is not None and counted_exactly(found, expected), (found, expected)
