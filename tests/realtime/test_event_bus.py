"""The event bus against the real broker: settings from the environment, the events topic,
a producer that returns only once Kafka acknowledged every message, batched reads."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from profile_store.event_bus.consumer import (
    ConsumeError,
    MessageBatch,
    batch_consumer,
    consume_batch,
)
from profile_store.event_bus.producer import DeliveryError, EventProducer
from profile_store.event_bus.settings import EventBusSettings, EventBusSettingsError
from profile_store.event_bus.topics import ensure_topic


def read_all(bus: EventBusSettings, count: int) -> list[MessageBatch]:
    consumer = batch_consumer(bus, f"reader-{uuid.uuid4().hex}")
    batches, read = [], 0
    try:
        for _ in range(600):
            batch = consume_batch(consumer, 1000, 0.5)
            batches.append(batch)
            read += len(batch)
            if read >= count:
                break
    finally:
        consumer.close()
    assert read == count
    return batches


def murmur2_partition(key: bytes, partitions: int) -> int:
    """The Java client's default partition for a key (Utils.murmur2, toPositive)."""
    m, h = 0x5BD1E995, (0x9747B28C ^ len(key)) & 0xFFFFFFFF
    for i in range(0, len(key) - len(key) % 4, 4):
        k = int.from_bytes(key[i : i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = key[len(key) - len(key) % 4 :]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return (h & 0x7FFFFFFF) % partitions


def test_settings_come_from_the_environment():
    settings = EventBusSettings.from_env(
        {
            "PROFILES_KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9093,kafka-2:9093",
            "PROFILES_KAFKA_TOPIC": "shop.events",
            "PROFILES_KAFKA_PARTITIONS": "12",
            "PROFILES_KAFKA_REPLICATION_FACTOR": "3",
            "PROFILES_KAFKA_MIN_INSYNC_REPLICAS": "2",
            "PROFILES_KAFKA_CONFIG_JSON": '{"security.protocol": "SASL_SSL", '
            '"sasl.mechanism": "SCRAM-SHA-512"}',
        }
    )
    assert (
        settings.topic,
        settings.partitions,
        settings.replication_factor,
        settings.min_insync_replicas,
    ) == ("shop.events", 12, 3, 2)
    assert settings.client_config(**{"group.id": "g"}) == {
        "bootstrap.servers": "kafka-1:9093,kafka-2:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "group.id": "g",
    }


def test_unset_settings_point_at_the_projects_own_broker():
    settings = EventBusSettings.from_env({})
    assert (settings.bootstrap_servers, settings.topic, settings.partitions) == (
        "127.0.0.1:9092",
        "events",
        6,
    )
    assert settings.min_insync_replicas is None  # the broker's default


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"PROFILES_KAFKA_PARTITIONS": "six"},
            "PROFILES_KAFKA_PARTITIONS: expected a whole number",
        ),
        (
            {"PROFILES_KAFKA_PARTITIONS": "0"},
            "PROFILES_KAFKA_PARTITIONS: expected a whole number >= 1",
        ),
        (
            {"PROFILES_KAFKA_REPLICATION_FACTOR": "-1"},
            "PROFILES_KAFKA_REPLICATION_FACTOR: expected",
        ),
        (
            {"PROFILES_KAFKA_MIN_INSYNC_REPLICAS": "0"},
            "PROFILES_KAFKA_MIN_INSYNC_REPLICAS: expected a whole number >= 1",
        ),
        (
            {"PROFILES_KAFKA_REPLICATION_FACTOR": "2", "PROFILES_KAFKA_MIN_INSYNC_REPLICAS": "3"},
            "PROFILES_KAFKA_MIN_INSYNC_REPLICAS: must be from 1 to the replication factor",
        ),
        ({"PROFILES_KAFKA_TOPIC": "my events"}, "PROFILES_KAFKA_TOPIC: 'my events' is not"),
        ({"PROFILES_KAFKA_BOOTSTRAP_SERVERS": " "}, "PROFILES_KAFKA_BOOTSTRAP_SERVERS: must not"),
        ({"PROFILES_KAFKA_CONFIG_JSON": "{sasl"}, "PROFILES_KAFKA_CONFIG_JSON: not JSON"),
        ({"PROFILES_KAFKA_CONFIG_JSON": "[]"}, "expected a JSON object of librdkafka properties"),
        ({"PROFILES_KAFKA_CONFIG_JSON": '{"acks": "1"}'}, "'acks' is set by the project"),
        ({"PROFILES_KAFKA_CONFIG_JSON": '{"x": {"y": 1}}'}, "'x' must be a string, number or"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_variable(env, message):
    with pytest.raises(EventBusSettingsError, match=message.replace("(", r"\(")):
        EventBusSettings.from_env(env)


def test_the_topic_is_created_once_with_the_configured_partitions(kafka_broker):
    settings = EventBusSettings(kafka_broker.bootstrap_servers, f"t-{uuid.uuid4().hex}", 3)
    first, second = ensure_topic(settings), ensure_topic(settings)
    assert (first.partitions, first.created) == (3, True)
    assert (second.partitions, second.created) == (3, False)


def test_an_existing_topic_keeps_its_own_partition_count(bus):
    wider = EventBusSettings(bus.bootstrap_servers, bus.topic, partitions=5)
    state = ensure_topic(wider)
    assert (state.partitions, state.created) == (2, False)


def test_send_returns_once_every_message_is_in_the_topic(bus):
    messages = [(f"user-{i % 40}", f'{{"n":{i}}}'.encode()) for i in range(2000)]
    with EventProducer(bus) as producer:
        producer.send(messages)
    values = Counter(v for batch in read_all(bus, 2000) for v in batch.values.to_pylist())
    assert values == Counter(value for _key, value in messages)


def test_calls_enqueued_together_are_each_awaited_on_their_own(bus):
    """The collector enqueues under its lock and awaits outside it: one call's failure is its
    own, and the other's messages are acknowledged all the same."""
    too_large = b'{"blob":"' + b"x" * 2_000_000 + b'"}'
    fine = [(f"user-{i}", f'{{"n":{i}}}'.encode()) for i in range(500)]
    with EventProducer(bus) as producer:
        refused = producer.enqueue([("u1", too_large), ("u2", b'{"n":-1}')])
        delivered = producer.enqueue(fine)
        with pytest.raises(DeliveryError) as failed:
            producer.await_delivery(refused)
        producer.await_delivery(delivered)
    assert [(f.index, f.key) for f in failed.value.failures] == [(0, b"u1")]
    values = Counter(v for batch in read_all(bus, 501) for v in batch.values.to_pylist())
    assert values == Counter([value for _key, value in fine] + [b'{"n":-1}'])


def test_a_users_events_share_the_partition_the_java_client_would_pick(bus):
    keys = [f"device-{i}".encode() for i in range(50)] + ["gerät-ü7".encode()]
    with EventProducer(bus) as producer:
        producer.send([(key, b"{}") for key in keys for _ in range(3)])
    seen: dict[bytes, set[int]] = {}
    for batch in read_all(bus, 3 * len(keys)):
        for key, partition in zip(batch.keys.to_pylist(), batch.partitions, strict=True):
            seen.setdefault(key, set()).add(int(partition))
    assert seen == {key: {murmur2_partition(key, bus.partitions)} for key in keys}


def test_a_message_kafka_refuses_is_named_and_the_others_are_delivered(bus):
    too_large = b'{"blob":"' + b"x" * 2_000_000 + b'"}'
    with EventProducer(bus) as producer, pytest.raises(DeliveryError) as failed:
        producer.send([("u1", b'{"n":1}'), ("u2", too_large), ("u3", b'{"n":3}')])
    assert [failure.index for failure in failed.value.failures] == [1]
    assert "1 of 3 messages not acknowledged by Kafka: message 1 (key 'u2')" in str(failed.value)
    assert sorted(v for b in read_all(bus, 2) for v in b.values.to_pylist()) == [
        b'{"n":1}',
        b'{"n":3}',
    ]


def test_an_empty_key_is_refused_before_anything_is_sent(bus):
    with EventProducer(bus) as producer, pytest.raises(ValueError, match="message 1: the key"):
        producer.send([("u1", b"{}"), ("", b"{}")])
    consumer = batch_consumer(bus, f"reader-{uuid.uuid4().hex}")
    try:
        assert len(consume_batch(consumer, 10, 5.0)) == 0
    finally:
        consumer.close()


def test_sending_to_a_missing_topic_fails_naming_every_message(kafka_broker):
    missing = EventBusSettings(kafka_broker.bootstrap_servers, f"missing-{uuid.uuid4().hex}")
    with (
        EventProducer(missing, delivery_timeout_s=2) as producer,
        pytest.raises(DeliveryError) as failed,
    ):
        producer.send([("u1", b"{}"), ("u2", b"{}")])
    assert [failure.index for failure in failed.value.failures] == [0, 1]


def test_reading_a_missing_topic_is_an_error_naming_it(kafka_broker):
    missing = EventBusSettings(kafka_broker.bootstrap_servers, f"missing-{uuid.uuid4().hex}")
    consumer = batch_consumer(missing, "reader")
    try:
        with pytest.raises(ConsumeError, match=missing.topic):
            for _ in range(100):
                consume_batch(consumer, 10, 0.5)
    finally:
        consumer.close()
