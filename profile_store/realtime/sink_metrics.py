"""What a stream consumer serves on its metrics port (``profiles stream ... --metrics-port``).

A registry of its own, served on its own port without a key (bound to loopback unless told
otherwise), as the HTTP service's are: the consumer's lag, the events it wrote, how long a batch
takes from its intent to its commit and, for the live job, the digest of its segment rules at
``/metrics``; beside them its liveness at ``/healthz`` (the consume loop came back within a
bound) and its readiness at ``/readyz`` (the consumer has its partitions from its Kafka group
and, for a job writing to HBase, HBase answers), 200 ``ok`` or 503 and why.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from confluent_kafka import KafkaException
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

logger = logging.getLogger(__name__)

LAG_REFRESH_S = 10.0
DEFAULT_LIVENESS_TIMEOUT_S = 180.0
"""Longer than a step can take while the job still works: the live job retries a failing HBase
for 120 s before it stops."""


class ConsumerHealth:
    """A consumer's liveness and readiness, told by its loop and its callbacks; thread-safe
    (one writer per field, read by the HTTP threads)."""

    def __init__(
        self, bound_s: float = DEFAULT_LIVENESS_TIMEOUT_S, needs_hbase: bool = False
    ) -> None:
        if not bound_s > 0:
            raise ValueError(f"bound_s must be greater than 0, got {bound_s}")
        self.bound_s = bound_s
        self._turned_at = time.monotonic()  # a start that hangs is wedged too
        self._assigned = False
        self._hbase_problem: str | None = "not asked yet" if needs_hbase else None
        self._stopping = False

    def turned(self) -> None:
        """The consume loop came back (after each step)."""
        self._turned_at = time.monotonic()

    def assigned(self, _consumer: Any = None, _partitions: Iterable[Any] = ()) -> None:
        """The group gave the consumer its partitions (a consumer's ``on_assign``)."""
        self._assigned = True

    def hbase_answered(self) -> None:
        self._hbase_problem = None

    def hbase_failed(self, error: BaseException) -> None:
        self._hbase_problem = f"failing ({error!r}), retried"

    def stopping(self) -> None:
        self._stopping = True

    def liveness(self) -> tuple[bool, str]:
        waited = time.monotonic() - self._turned_at
        if waited > self.bound_s:
            return False, (
                f"the consume loop has not come back for {waited:.1f} s (bound {self.bound_s:g} s)"
            )
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        if self._stopping:
            return False, "stopping"
        if not self._assigned:
            return False, "waiting for partitions from the Kafka consumer group"
        if self._hbase_problem is not None:
            return False, f"HBase: {self._hbase_problem}"
        return True, "ok"


class ConsumerMetrics:
    """The metrics of one consumer process, named ``profiles_<name>_*``, and its ``health``."""

    def __init__(self, name: str, health: ConsumerHealth) -> None:
        self.health = health
        self.registry = CollectorRegistry()
        self.lag = Gauge(
            f"profiles_{name}_lag_messages",
            "Messages in the topic the consumer group has not committed yet (all partitions).",
            registry=self.registry,
        )
        self.events = Counter(
            f"profiles_{name}_events",
            "Events written and committed by this process.",
            registry=self.registry,
        )
        self.write_seconds = Histogram(
            f"profiles_{name}_write_seconds",
            "Time to write one batch and commit its offsets.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
            registry=self.registry,
        )
        self._name = name
        self._lag_read_at = float("-inf")
        self._segment_rules: Info | None = None

    def applies_segment_rules(self, digest: str, count: int) -> None:
        """Report the digest of the segment rules the process applies, as
        ``profiles_<name>_segment_rules_info{digest, rules}``: the daily run records its own in
        its materialization, so a job left on older rules shows."""
        if self._segment_rules is None:
            self._segment_rules = Info(
                f"profiles_{self._name}_segment_rules",
                "The segment rules this process applies (read from the lake at its start and "
                "again as they change).",
                registry=self.registry,
            )
        self._segment_rules.info({"digest": digest, "rules": str(count)})

    def written(self, events: int, seconds: float) -> None:
        self.events.inc(events)
        self.write_seconds.observe(seconds)

    def refresh_lag(self, read_lag: Callable[[], int]) -> None:
        """Read the lag again when the last reading is ``LAG_REFRESH_S`` old; Kafka unreachable
        keeps the last value (the consumer's own log says why)."""
        now = time.monotonic()
        if now - self._lag_read_at < LAG_REFRESH_S:
            return
        self._lag_read_at = now
        try:
            self.lag.set(read_lag())
        except KafkaException as error:
            logger.warning("metrics: cannot read the lag (%s)", error)

    def serve(self, host: str, port: int) -> WSGIServer:
        """Serve ``/metrics``, ``/healthz`` and ``/readyz`` in a daemon thread; ``port`` 0 picks
        a free one."""
        metrics = make_wsgi_app(self.registry)
        probes = {"/healthz": self.health.liveness, "/readyz": self.health.readiness}

        def app(environ: dict[str, Any], start_response: Callable) -> list[bytes]:
            probe = probes.get(environ.get("PATH_INFO", ""))
            if probe is None:
                return metrics(environ, start_response)
            ok, why = probe()
            start_response(
                "200 OK" if ok else "503 Service Unavailable",
                [("Content-Type", "text/plain; charset=utf-8")],
            )
            return [f"{why}\n".encode()]

        class ConsumerMetricsServer(ThreadingWSGIServer):
            address_family = socket.AF_INET6 if ":" in host else socket.AF_INET

        server = make_server(host, port, app, ConsumerMetricsServer, handler_class=_QuietHandler)
        threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
        logger.info("metrics on http://%s:%d/metrics", host, server.server_port)
        return server


class _QuietHandler(WSGIRequestHandler):
    """No log line per scrape or probe."""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass
