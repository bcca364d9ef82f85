"""The HTTP service's Prometheus metrics, and the listener operators scrape them from.

``/metrics`` is served on its own port (``profiles serve --metrics-port``), bound to loopback
unless ``--metrics-host`` says otherwise, and needs no key: the service's own port faces tenants
(and, behind a load balancer, the internet), while request rates per route, error rates and
latencies are the operators' business; the usual Prometheus scraper sends no ``X-API-Key``, and a
private address keeps the figures private without a secret to distribute and rotate.

The metrics are process-wide (one service per process), in prometheus-client's default
registry, so the process collectors (memory, CPU, open files) come with them.
"""

from __future__ import annotations

import logging
import socket
import threading
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

logger = logging.getLogger(__name__)

UNMATCHED_ROUTE = "unmatched"
"""The route label of a request no route matched (a fixed value: paths are unbounded)."""

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
"""Method labels; any other method counts as ``other`` (h11 accepts any token as a method)."""
REJECTION_REASONS = ("auth", "size", "timeout")
HBASE_ERROR_KINDS = ("unavailable", "error")

REQUESTS = Counter(
    "profiles_http_requests",
    "HTTP requests answered, by route template, method and status code.",
    ["route", "method", "status"],
)
LATENCY = Histogram(
    "profiles_http_request_duration_seconds",
    "Time from a request's headers to the end of its response, by route template and method.",
    ["route", "method"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
IN_FLIGHT = Gauge("profiles_http_requests_in_flight", "Requests being answered now.")
REQUEST_BODY_BYTES = Counter(
    "profiles_http_request_body_bytes",
    "Request body bytes the service read, by route template.",
    ["route"],
)
RESPONSE_BODY_BYTES = Counter(
    "profiles_http_response_body_bytes",
    "Response body bytes sent, by route template.",
    ["route"],
)
REJECTED = Counter(
    "profiles_http_rejected_requests",
    "Requests refused before being answered, by reason: auth (401, 403), size (413), timeout "
    "(408 for a body, or headers that did not arrive in time).",
    ["reason"],
)
CONNECTIONS = Gauge("profiles_http_connections", "Open HTTP connections.")
HBASE_ERRORS = Counter(
    "profiles_hbase_errors",
    "HBase failures met while answering: unavailable (cannot be reached) or error (HBase "
    "reported one).",
    ["kind"],
)
COLLECTED_EVENTS = Counter(
    "profiles_collector_accepted_events",
    "Events POST /v1/events accepted and Kafka acknowledged.",
)
REJECTED_EVENTS = Counter(
    "profiles_collector_rejected_events",
    "Events POST /v1/events rejected, by reason (the quarantine's reason names, or "
    "app_not_allowed).",
    ["reason"],
)
UNDELIVERED_EVENTS = Counter(
    "profiles_collector_undelivered_events",
    "Accepted events Kafka did not acknowledge (the request was answered 503).",
)
DELIVERY_LATENCY = Histogram(
    "profiles_collector_kafka_delivery_seconds",
    "Time from a request's first message handed to the producer to the last acknowledgement.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)
for _reason in REJECTION_REASONS:
    REJECTED.labels(_reason)
for _kind in HBASE_ERROR_KINDS:
    HBASE_ERRORS.labels(_kind)

_REJECTION_OF_STATUS = {401: "auth", 403: "auth", 408: "timeout", 413: "size"}


def record_answer(route: str, method: str, status: int, seconds: float) -> None:
    """One answered request; a refusal also counts under its reason."""
    method = method if method in METHODS else "other"
    REQUESTS.labels(route, method, str(status)).inc()
    LATENCY.labels(route, method).observe(seconds)
    reason = _REJECTION_OF_STATUS.get(status)
    if reason is not None:
        REJECTED.labels(reason).inc()


def record_collected(accepted: int, rejected: dict[str, int], delivery_seconds: float) -> None:
    """One request of the collector: events accepted (and their delivery time), rejected."""
    COLLECTED_EVENTS.inc(accepted)
    for reason, count in rejected.items():
        REJECTED_EVENTS.labels(reason).inc(count)
    if accepted:
        DELIVERY_LATENCY.observe(delivery_seconds)


def record_undelivered(events: int) -> None:
    UNDELIVERED_EVENTS.inc(events)


def record_header_timeout() -> None:
    """A connection closed because a request's headers did not arrive in time."""
    REJECTED.labels("timeout").inc()


def record_hbase_error(kind: str) -> None:
    HBASE_ERRORS.labels(kind).inc()


METRICS_READ_TIMEOUT_S = 10.0


class _ScrapeHandler(WSGIRequestHandler):
    timeout = METRICS_READ_TIMEOUT_S  # a client that stalls mid-request is dropped, not kept

    def log_message(self, format: str, *args: object) -> None:
        """Scrapes are not logged: one every few seconds would drown the service's log."""


def serve_metrics(host: str, port: int) -> WSGIServer:
    """Start the ``/metrics`` listener (a thread per scrape) in a daemon thread; ``port`` 0
    picks a free one (``server.server_port``). ``shutdown()`` stops it."""
    family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0][0]

    class MetricsServer(ThreadingWSGIServer):
        address_family = family

    server = make_server(host, port, make_wsgi_app(REGISTRY), MetricsServer, _ScrapeHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    logger.info("metrics on http://%s:%d/metrics", host, server.server_port)
    return server
