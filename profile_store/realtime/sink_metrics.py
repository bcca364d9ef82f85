"""Prometheus metrics of a stream consumer (``profiles stream lake-sink --metrics-port``).

A registry of its own, served on its own port without a key (bound to loopback unless told
otherwise), as the HTTP service's are: the consumer's lag, the events it wrote, and how long a
batch takes from its intent to its commit.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from wsgiref.simple_server import WSGIServer

from confluent_kafka import KafkaException
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

logger = logging.getLogger(__name__)

LAG_REFRESH_S = 10.0


class ConsumerMetrics:
    """The metrics of one consumer process, named ``profiles_<name>_*``."""

    def __init__(self, name: str) -> None:
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
        self._lag_read_at = float("-inf")

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
        """Serve ``/metrics`` in a daemon thread; ``port`` 0 picks a free one."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        logger.info("metrics on http://%s:%d/metrics", host, server.server_port)
        return server
