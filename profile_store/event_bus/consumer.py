"""Reading the events topic in batches, as Arrow columns, with offsets committed by the caller.

Consumers of the real-time path decide themselves when what they read is safe to acknowledge
(the lake sink: once its files are written), so automatic commits and offset storing are off.
A batch comes back as Arrow columns; the only per-message Python is reading the fields of the
message objects librdkafka hands over.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from profile_store.event_bus.settings import EventBusSettings

logger = logging.getLogger(__name__)

PartitionCallback = Callable[[Consumer, list[TopicPartition]], None]


class ConsumeError(RuntimeError):
    """Kafka reported an error the consumer cannot read past (e.g. the topic is missing)."""


def batch_consumer(
    settings: EventBusSettings,
    group_id: str,
    *,
    on_assign: PartitionCallback | None = None,
    on_revoke: PartitionCallback | None = None,
    properties: dict[str, Any] | None = None,
) -> Consumer:
    """A consumer of the events topic in ``group_id``, subscribed, committing only when told.

    ``on_revoke`` is also called when partitions are lost (the group moved on without this
    member): either way they are no longer this consumer's to commit.
    """
    consumer = Consumer(
        settings.client_config(
            **{
                "group.id": group_id,
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": False,
                **(properties or {}),
            }
        )
    )
    callbacks: dict[str, PartitionCallback] = {}
    if on_assign is not None:
        callbacks["on_assign"] = on_assign
    if on_revoke is not None:
        callbacks["on_revoke"] = on_revoke
        callbacks["on_lost"] = on_revoke
    consumer.subscribe([settings.topic], **callbacks)
    return consumer


@dataclass(frozen=True)
class MessageBatch:
    """Consumed messages as columns, in the order librdkafka returned them (per partition, in
    offset order)."""

    partitions: np.ndarray  # int32
    offsets: np.ndarray  # int64
    timestamps_ms: np.ndarray  # int64: the message timestamp (the producer's send time)
    keys: pa.BinaryArray
    values: pa.BinaryArray

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def value_bytes(self) -> int:
        return int(self.values.nbytes)

    def take(self, rows: np.ndarray) -> MessageBatch:
        """The rows at ``rows`` (indices, or a boolean mask)."""
        if rows.dtype == bool:
            rows = np.flatnonzero(rows)
        indices = pa.array(rows, pa.int64())
        return MessageBatch(
            self.partitions[rows],
            self.offsets[rows],
            self.timestamps_ms[rows],
            self.keys.take(indices),
            self.values.take(indices),
        )

    @staticmethod
    def of(messages: list[Message]) -> MessageBatch:
        return MessageBatch(
            np.fromiter((m.partition() for m in messages), np.int32, len(messages)),
            np.fromiter((m.offset() for m in messages), np.int64, len(messages)),
            np.fromiter((m.timestamp()[1] for m in messages), np.int64, len(messages)),
            pa.array([m.key() for m in messages], pa.binary()),
            pa.array([m.value() or b"" for m in messages], pa.binary()),
        )


def consume_batch(consumer: Consumer, max_messages: int, timeout: float) -> MessageBatch:
    """Up to ``max_messages`` messages, waiting at most ``timeout`` s for the first.

    Errors librdkafka recovers from by itself (a broker restarting) are logged; an error about
    the topic itself raises ``ConsumeError``.
    """
    messages = consumer.consume(max_messages, timeout)
    good = [m for m in messages if m.error() is None]
    if len(good) < len(messages):
        for message in messages:
            error = message.error()
            if error is None:
                continue
            if error.fatal() or error.code() in (
                KafkaError.UNKNOWN_TOPIC_OR_PART,
                KafkaError.TOPIC_AUTHORIZATION_FAILED,
                KafkaError.GROUP_AUTHORIZATION_FAILED,
            ):
                raise ConsumeError(f"consuming {message.topic()!r}: {error.str()}")
            logger.warning("consumer: %s", error.str())
    return MessageBatch.of(good)
