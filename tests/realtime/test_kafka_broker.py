"""The project's Apache Kafka: one KRaft node from Maven Central jars, restartable over its data
directory, and a clear one-line refusal without Java 17 or Maven; a cluster's directory."""

from __future__ import annotations

import re
import sys
import uuid

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from foreground_commands import interrupt, start_until_ready
from group_offsets import committed_once_loaded
from reconnecting_clients import reconnecting_clients

from profile_store.event_bus.producer import EventProducer
from profile_store.event_bus.topics import ensure_topic
from profile_store.launchers.child_processes import ephemeral_port_range
from profile_store.launchers.kafka_broker import (
    KafkaBroker,
    KafkaStartError,
    kafka_jars,
    require_java,
)
from profile_store.launchers.kafka_cluster import KafkaCluster


def read_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{uuid.uuid4().hex}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        for _ in range(300):
            values += [m.value() for m in consumer.consume(100, 0.5) if m.error() is None]
            if len(values) >= count:
                break
    finally:
        consumer.close()
    return values


def test_a_restart_over_the_data_directory_keeps_address_topics_and_committed_offsets(
    kafka_broker, bus
):
    with EventProducer(bus) as producer:
        producer.send([(f"u{i}", f"{i}".encode()) for i in range(20)])
    group = {"bootstrap.servers": bus.bootstrap_servers, "group.id": f"g-{uuid.uuid4().hex}"}
    committer = Consumer(group)
    committer.commit(offsets=[TopicPartition(bus.topic, 0, 3, metadata="kept")], asynchronous=False)
    committer.close()
    address = kafka_broker.bootstrap_servers

    kafka_broker.stop()
    kafka_broker.start()

    assert kafka_broker.bootstrap_servers == address
    assert ensure_topic(bus).created is False
    committed = committed_once_loaded(group, TopicPartition(bus.topic, 0))
    assert (committed.offset, committed.metadata) == (3, "kept")
    assert sorted(read_values(address, bus.topic, 20), key=int) == [
        f"{i}".encode() for i in range(20)
    ]


def test_acknowledged_messages_survive_a_kill_9_of_the_broker(kafka_broker, bus):
    with EventProducer(bus) as producer:
        producer.send([(f"u{i}", f"{i}".encode()) for i in range(100)])

    kafka_broker.kill()
    kafka_broker.start()

    assert sorted(read_values(bus.bootstrap_servers, bus.topic, 100), key=int) == [
        f"{i}".encode() for i in range(100)
    ]


def test_the_brokers_ports_lie_outside_the_kernels_ephemeral_range(kafka_broker):
    low, high = ephemeral_port_range()
    for port in (kafka_broker.port, kafka_broker.controller_port):
        assert not low <= port <= high, f"{port} is in the ephemeral range {low}-{high}"


def test_a_broker_restarted_while_clients_keep_reconnecting_starts_on_its_port(kafka_broker, bus):
    address = kafka_broker.bootstrap_servers
    kafka_broker.stop()

    with reconnecting_clients(kafka_broker.port) as clients:
        kafka_broker.start()
        clients.wait_until_accepted()

    assert kafka_broker.bootstrap_servers == address
    assert clients.accepted
    assert clients.self_connected == 0
    with EventProducer(bus) as producer:
        producer.send([("u1", b"after the restart")])
    assert read_values(address, bus.topic, 1) == [b"after the restart"]


@pytest.mark.jvm
def test_profiles_kafka_runs_a_broker_until_interrupted_and_prints_its_address(tmp_path):
    command = [sys.executable, "-m", "profile_store.cli", "kafka", "--data-dir", str(tmp_path)]
    process, output = start_until_ready([*command, "--port", "0"])
    try:
        match = re.search(r"PROFILES_KAFKA_BOOTSTRAP_SERVERS=(127\.0\.0\.1:\d+)", output)
        assert match, output
        assert AdminClient({"bootstrap.servers": match.group(1)}).list_topics(timeout=30).brokers
    finally:
        rest = interrupt(process)
    assert process.returncode == 0, rest
    assert "stopping Apache Kafka" in rest


def test_without_java_the_broker_is_refused_in_one_line_naming_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaStartError) as refused:
        KafkaBroker(tmp_path / "kafka").start()
    assert str(refused.value) == (
        "Java 17 or later is needed to run Apache Kafka "
        "(Debian: apt-get install -y openjdk-17-jre-headless)"
    )


def test_a_java_older_than_17_is_refused_naming_its_version(tmp_path, monkeypatch):
    java = tmp_path / "java"
    java.write_text("#!/bin/sh\necho 'openjdk version \"11.0.22\" 2024-01-16' >&2\n")
    java.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(KafkaStartError, match=r"needs Java 17 or later, .*java is Java 11 "):
        require_java()


def test_without_maven_the_first_resolution_is_refused_naming_the_package(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PROFILES_CACHE_DIR", str(tmp_path / "empty-cache"))
    with pytest.raises(KafkaStartError) as refused:
        kafka_jars()
    assert "\n" not in str(refused.value)
    assert "apt-get install -y maven" in str(refused.value)


def test_a_cluster_directory_keeps_its_nodes_ports_and_id_and_refuses_another_node_count(
    tmp_path,
):
    first = KafkaCluster(tmp_path, nodes=3)
    again = KafkaCluster(tmp_path, nodes=3)

    assert (again.cluster_id, again.ports) == (first.cluster_id, first.ports)
    assert len({port for ports in first.ports.values() for port in ports}) == 6
    assert first.voters.count("@127.0.0.1:") == 3
    with pytest.raises(ValueError, match="holds a cluster of 3 nodes, not 2"):
        KafkaCluster(tmp_path, nodes=2)
