"""One real Apache Kafka for the real-time tests (``profile_store.launchers.kafka_broker``), and
an embedded gateway per module for those that write profile rows.

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


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"))
    refused = None
    try:
        broker.start()
    except KafkaStartError as error:
        refused = str(error).splitlines()[0]
    if refused is not None:
        pytest.fail(refused, pytrace=False)
    yield broker
    broker.kill()


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
