"""One real Apache Kafka for the real-time tests (``profile_store.launchers.kafka_broker``), a
cluster of three for the modules that need one (``kafka_cluster``), and an embedded gateway per
module for those that write profile rows.

The first session on a machine resolves Kafka's jars from Maven Central. Without Java or Maven
the tests fail with one line naming the package to install, never a silent skip.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest

from profile_store.event_bus.settings import EventBusSettings
from profile_store.event_bus.topics import ensure_topic
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.launchers.kafka_broker import KafkaBroker, KafkaStartError
from profile_store.launchers.kafka_cluster import KafkaCluster


def start_or_fail(kafka: KafkaBroker | KafkaCluster) -> None:
    """Start it; a missing requirement fails with its one line, not a traceback."""
    refused = None
    try:
        kafka.start()
    except KafkaStartError as error:
        refused = str(error).splitlines()[0]
    if refused is not None:
        pytest.fail(refused, pytrace=False)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"))
    start_or_fail(broker)
    yield broker
    broker.kill()


@pytest.fixture(scope="module")
def kafka_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    """Three KRaft nodes, each broker and controller, for the module's faults of a cluster."""
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka-cluster"), nodes=3)
    start_or_fail(cluster)
    yield cluster
    cluster.kill()


@pytest.fixture
def bus(kafka_broker: KafkaBroker, request: pytest.FixtureRequest) -> EventBusSettings:
    """A fresh topic of 2 partitions for this test on the session's broker."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:80]
    settings = EventBusSettings(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        topic=f"{name}-{uuid.uuid4().hex[:8]}",
        partitions=2,
    )
    ensure_topic(settings)
    return settings


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedGateway]:
    with EmbeddedGateway(tmp_path_factory.mktemp("hbase")) as started:
        yield started
