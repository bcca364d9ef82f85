"""Events received over HTTP, checked by ingest's rules and made durable in Kafka.

A request's lines are parsed once (``parsed_lines``), checked by the rule table with Arrow
compute (``arrow_rules``: the rules ingest applies, so the collector accepts what the daily run
would accept), and each accepted event of an app the sender may send goes to the events topic,
its ids in their one spelling (``id_case``), keyed by user id (``event_keys``). ``collect``
returns only once Kafka acknowledged every accepted event (``EventProducer.enqueue`` and
``await_delivery``: ``acks=all``, idempotent); otherwise it raises ``DeliveryError``, and the
sender sends the whole request again: an event written before the failure is then in Kafka
twice, identical, and ingest keeps one copy.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.event_bus.producer import EventProducer
from profile_store.events.arrow_rules import reasons
from profile_store.events.id_case import spelled_event
from profile_store.events.parsed_lines import parse_lines
from profile_store.events.rules import ValidationRules
from profile_store.realtime.event_keys import event_key

APP_NOT_ALLOWED = "app_not_allowed"
"""The reason of an event of an app the sender's key may not send (not a quarantine reason: such
an event never reaches the lake)."""


@dataclass(frozen=True)
class Rejection:
    index: int  # the line's position in the request, from 0 (blank lines count)
    reason: str
    app_id: str | None = None  # for ``app_not_allowed``: the app named


@dataclass
class Collected:
    """What became of a request's events: how many Kafka holds, and each rejected line."""

    accepted: int = 0
    rejected: list[Rejection] = field(default_factory=list)
    delivery_seconds: float = 0.0

    def rejected_by_reason(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for rejection in self.rejected:
            counts[rejection.reason] = counts.get(rejection.reason, 0) + 1
        return counts


_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _compact(event: dict) -> bytes:
    return _COMPACT.encode(event).encode("utf-8")


class KafkaNotConfigured(RuntimeError):
    """Events were accepted, but the collector has no Kafka to send them to."""


class EventCollector:
    """Checks and sends events for the HTTP route and ``profiles send`` (through the route);
    without a producer (Kafka not configured) it still checks, and refuses to accept."""

    def __init__(
        self, producer: EventProducer | None, rules: ValidationRules | None = None
    ) -> None:
        self.producer = producer
        self.rules = rules or ValidationRules()
        self._checking = threading.Lock()

    def collect(
        self, lines: Sequence[bytes | None], may_send: Callable[[str], bool] | None
    ) -> Collected:
        """Check ``lines`` (None: a blank line, skipped) and send the accepted events.

        ``may_send`` says whether the sender may send an app's events (None: any app). Raises
        ``DeliveryError`` when Kafka did not acknowledge every accepted event, and
        ``KafkaNotConfigured`` when some event was accepted but there is no producer.

        Requests are checked and handed to the producer one at a time, and wait for Kafka's
        acknowledgements together: the checks are Python holding the interpreter's lock, and
        the same four requests checked in turn took a third less CPU per event than checked at
        once (the threads' hand-offs of that lock), for at least as many events a second."""
        producer = self.producer
        with self._checking:
            messages, rejected = self._checked(lines, may_send)
            if not messages:
                return Collected(0, rejected)
            if producer is None:
                raise KafkaNotConfigured(f"{len(messages)} events accepted, but no Kafka")
            started = time.perf_counter()
            pending = producer.enqueue(messages)
        producer.await_delivery(pending)
        return Collected(len(messages), rejected, time.perf_counter() - started)

    def _checked(
        self, lines: Sequence[bytes | None], may_send: Callable[[str], bool] | None
    ) -> tuple[list[tuple[str, bytes]], list[Rejection]]:
        """The accepted events as ``(key, compact JSON)`` messages, and the rejected lines."""
        positions = np.array([i for i, line in enumerate(lines) if line is not None], np.int64)
        present = [line for line in lines if line is not None]
        parsed = parse_lines(present)
        reason = reasons(parsed.columns, None, self.rules)
        valid = pc.is_null(reason).to_numpy(zero_copy_only=False)
        apps = parsed.columns["app_id"].combine_chunks()
        forbidden = np.zeros(len(present), dtype=bool)
        if may_send is not None:
            sent_apps = pc.unique(apps.filter(pa.array(valid))).to_pylist()
            refused = [app for app in sent_apps if not may_send(app)]
            if refused:
                forbidden = valid & pc.is_in(apps, pa.array(refused, pa.string())).to_numpy(
                    zero_copy_only=False
                )
        reason_texts = reason.to_pylist()
        app_texts = apps.to_pylist()
        rejected = [
            Rejection(int(positions[i]), APP_NOT_ALLOWED, app_texts[i])
            if forbidden[i]
            else Rejection(int(positions[i]), reason_texts[i])
            for i in np.flatnonzero(~valid | forbidden)
        ]
        messages = []
        for i in np.flatnonzero(valid & ~forbidden):
            parsed_object = parsed.objects[i]
            if parsed_object is None:  # valid lines are parsed objects
                raise RuntimeError(f"line {int(positions[i])}: valid but not parsed")
            event = spelled_event(parsed_object)
            key = event_key(event)
            if key is None:  # the schema requires a non-blank user_id
                raise RuntimeError(f"line {int(positions[i])}: valid but without a user id")
            messages.append((key, _compact(event)))
        return messages, rejected
