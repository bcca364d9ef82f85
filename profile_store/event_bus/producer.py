"""Sending events: idempotent, every replica's acknowledgement awaited, each failure named.

The collector answers 202 only once its events are durable in Kafka, so ``send`` returns only
when every message of the call has its delivery report and each one is an acknowledgement from
all in-sync replicas (``acks=all``); otherwise it raises ``DeliveryError`` naming each message
that failed and why. Idempotence makes librdkafka's own retries write each message once. A
message that timed out may still have been written: a re-sent event repeats its ``event_id``,
and ingest keeps one copy of identical deliveries.

Messages are keyed by user id; ``murmur2_random`` is the Java client's partitioner, so a key
lands on the same partition whichever client (this one, Spark, Kafka Connect) wrote it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from profile_store.event_bus.settings import EventBusSettings

DEFAULT_DELIVERY_TIMEOUT_S = 30.0
# Margin past librdkafka's own message timeout before a missing report counts as a failure.
_REPORT_GRACE_S = 15.0


@dataclass(frozen=True)
class DeliveryFailure:
    index: int  # position of the message in the ``send`` call
    key: bytes
    reason: str


class DeliveryError(RuntimeError):
    """Some messages of a ``send`` were not acknowledged; ``failures`` names each of them."""

    def __init__(self, failures: list[DeliveryFailure], total: int) -> None:
        self.failures = sorted(failures, key=lambda failure: failure.index)
        self.total = total
        shown = "; ".join(
            f"message {f.index} (key {f.key.decode(errors='replace')!r}): {f.reason}"
            for f in self.failures[:5]
        )
        more = f"; and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
        super().__init__(
            f"{len(self.failures)} of {total} messages not acknowledged by Kafka: {shown}{more}"
        )


class _Reports:
    """The delivery reports of one ``send``, which librdkafka's callbacks fill in."""

    def __init__(self, total: int) -> None:
        self.pending = total
        self.reported: set[int] = set()
        self.failures: list[DeliveryFailure] = []
        self.fatal = False
        self._lock = threading.Lock()

    def report(self, index: int, key: bytes, error: KafkaError | None, _message: Message) -> None:
        with self._lock:
            self.pending -= 1
            self.reported.add(index)
            if error is not None:
                self.failures.append(DeliveryFailure(index, key, error.str()))
                self.fatal = self.fatal or error.fatal()

    def fail(self, index: int, key: bytes, reason: str) -> None:
        with self._lock:
            self.pending -= 1
            self.reported.add(index)
            self.failures.append(DeliveryFailure(index, key, reason))


@dataclass(frozen=True)
class PendingDelivery:
    """Messages handed to librdkafka (``EventProducer.enqueue``), their reports to come."""

    producer: Producer
    keys: list[bytes]
    reports: _Reports


def message_key(key: str | bytes, index: int) -> bytes:
    """The key as bytes; an empty key would not be keyed by user, so it is refused."""
    encoded = key.encode() if isinstance(key, str) else bytes(key)
    if not encoded:
        raise ValueError(f"message {index}: the key (the user id) is empty")
    return encoded


class EventProducer:
    """Sends keyed messages to the events topic; thread-safe, one instance per process."""

    def __init__(
        self,
        settings: EventBusSettings,
        *,
        delivery_timeout_s: float = DEFAULT_DELIVERY_TIMEOUT_S,
        properties: dict[str, Any] | None = None,
    ) -> None:
        self.settings = settings
        self.delivery_timeout_s = delivery_timeout_s
        self._config = settings.client_config(
            **{
                "enable.idempotence": True,
                "acks": "all",
                "partitioner": "murmur2_random",
                "linger.ms": 5,
                "compression.type": "lz4",
                # Every message gets its final report within this time: sent or failed.
                "message.timeout.ms": int(delivery_timeout_s * 1000),
                **(properties or {}),
            }
        )
        self._producer = Producer(self._config)
        self._lock = threading.Lock()

    def send(self, messages: Sequence[tuple[str | bytes, bytes]]) -> None:
        """Send ``(key, value)`` pairs; return once all are acknowledged, else raise
        ``DeliveryError``. An empty key is refused (``ValueError``) before anything is sent."""
        self.await_delivery(self.enqueue(messages))

    def enqueue(self, messages: Sequence[tuple[str | bytes, bytes]]) -> PendingDelivery:
        """The first half of ``send``: hand the messages to librdkafka and return at once;
        ``await_delivery`` waits for their reports. A caller that checks and enqueues under a
        lock of its own waits outside it, so that concurrent calls' waits overlap."""
        keys = [message_key(key, index) for index, (key, _value) in enumerate(messages)]
        producer = self._producer
        reports = _Reports(len(messages))
        for index, (key, (_key, value)) in enumerate(zip(keys, messages, strict=True)):
            callback = partial(reports.report, index, key)
            while True:
                try:
                    producer.produce(
                        self.settings.topic, value=value, key=key, on_delivery=callback
                    )
                    break
                except BufferError:  # the local queue is full: serve reports, then retry
                    producer.poll(0.05)
                except KafkaException as error:  # refused locally, e.g. larger than allowed
                    reports.fail(index, key, error.args[0].str())
                    break
        return PendingDelivery(producer, keys, reports)

    def await_delivery(self, pending: PendingDelivery) -> None:
        """The second half of ``send``: return once every message of ``pending`` is
        acknowledged, else raise ``DeliveryError``."""
        producer, keys, reports = pending.producer, pending.keys, pending.reports
        deadline = time.monotonic() + self.delivery_timeout_s + _REPORT_GRACE_S
        while reports.pending > 0 and time.monotonic() < deadline:
            producer.poll(0.05)
        if reports.pending > 0:
            for index in range(len(keys)):
                if index not in reports.reported:
                    reports.fail(index, keys[index], "no delivery report from librdkafka in time")
        if reports.fatal:
            self._renew(producer)
        if reports.failures:
            raise DeliveryError(reports.failures, len(keys))

    def _renew(self, broken: Producer) -> None:
        """An idempotent producer's fatal error (e.g. a fenced producer id) ends that producer;
        the next ``send`` uses a new one."""
        with self._lock:
            if self._producer is broken:
                self._producer = Producer(self._config)

    def close(self, timeout: float = 10.0) -> int:
        """Wait for messages still queued (from calls that raised); how many remain unsent."""
        return self._producer.flush(timeout)

    def __enter__(self) -> EventProducer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
