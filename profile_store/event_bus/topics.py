"""The events topic: created with the configured partitions, replication factor and
``min.insync.replicas``, never silently re-partitioned.

Events are keyed by user id, so a user's events share a partition and stay in order there; adding
partitions later moves keys between partitions, so an existing topic is left as it is and its
own partition count is reported.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from profile_store.event_bus.settings import EventBusSettings


class TopicError(RuntimeError):
    """The topic could not be read or created; the message says which and why."""


@dataclass(frozen=True)
class TopicState:
    name: str
    partitions: int
    created: bool


def admin_client(settings: EventBusSettings) -> AdminClient:
    return AdminClient(settings.client_config())


def topic_partitions(admin: AdminClient, topic: str, timeout: float = 10.0) -> int | None:
    """How many partitions ``topic`` has; None when it does not exist."""
    try:
        metadata = admin.list_topics(topic=topic, timeout=timeout)
    except KafkaException as error:
        raise TopicError(f"could not read the metadata of topic {topic!r}: {error}") from error
    described = metadata.topics.get(topic)
    if described is None:
        return None
    if described.error is not None:
        if described.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise TopicError(f"topic {topic!r}: {described.error.str()}")
        return None
    return len(described.partitions)


def ensure_topic(settings: EventBusSettings, timeout: float = 30.0) -> TopicState:
    """The events topic, created with the settings' partitions, replication factor and
    ``min.insync.replicas`` when it does not exist yet."""
    admin = admin_client(settings)
    existing = topic_partitions(admin, settings.topic, timeout)
    if existing is not None:
        return TopicState(settings.topic, existing, created=False)
    config = {}
    if settings.min_insync_replicas is not None:
        config["min.insync.replicas"] = str(settings.min_insync_replicas)
    futures = admin.create_topics(
        [NewTopic(settings.topic, settings.partitions, settings.replication_factor, config=config)],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    created = True
    try:
        futures[settings.topic].result()
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise TopicError(f"could not create topic {settings.topic!r}: {error}") from error
        created = False  # another process created it meanwhile
    deadline = time.monotonic() + timeout
    while (partitions := topic_partitions(admin, settings.topic, timeout)) is None:
        if time.monotonic() > deadline:
            raise TopicError(f"topic {settings.topic!r} was created but is not in the metadata")
        time.sleep(0.1)
    return TopicState(settings.topic, partitions, created=created)
