"""The gateway's Prometheus metrics: every process counts into shared memory, one serves them.

A pre-forked gateway serves a client from whichever worker accepted it and applies batches and
compacts in its upkeep process, so per-process counters would show a scrape one process's
share. Each process instead adds to its own row of one array of doubles, created before the
fork (a row has one writer process; its threads take a lock), and ``/metrics`` sums the rows:
the numbers are the whole gateway's, and a worker that is replaced keeps its row, so counters
never go back. What is a state rather than a count (open connections, batches waiting, the
store's size) is read when scraped: from the connection slots, the pending log's counters and
the data directory.

The endpoint (and beside it the liveness and readiness probes of ``health``) is served by a
process of its own in a pre-forked gateway (the parent stays single-threaded, and a scrape never
competes with a call), by a thread with ``--workers 1``.
"""

from __future__ import annotations

import bisect
import ctypes
import socket
import threading
from collections.abc import Iterator
from http.server import ThreadingHTTPServer
from multiprocessing.sharedctypes import RawArray
from pathlib import Path

from prometheus_client.exposition import MetricsHandler
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import CollectorRegistry
from prometheus_client.utils import floatToGoString

from .admission import ConnectionSlots
from .data_dir import DB_FILE, LOG_FILE
from .health import GatewayHealth
from .idl import served_methods
from .pending import read_counters

METHODS = (*sorted(served_methods()), "(unknown)")
"""Thrift methods, as labels; any name not in the IDL counts as ``(unknown)``, so a client
cannot add series by sending made-up names."""
UNKNOWN_METHOD = METHODS[-1]
OUTCOMES = ("success", "IOError", "IllegalArgument", "AlreadyExists", "TApplicationException")
LATENCY_BUCKETS = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)
REQUEST_BUCKETS = tuple(float(4**n * 256) for n in range(10))  # 256 B .. 64 MiB
CONNECTION_EVENTS = ("admitted", "evicted", "refused")
BOUNDS = ("frame", "string")
STORE_FILES = (DB_FILE, f"{DB_FILE}-wal", LOG_FILE, f"{LOG_FILE}-wal")

_METHOD_INDEX = {name: i for i, name in enumerate(METHODS)}
_UNKNOWN = _METHOD_INDEX[UNKNOWN_METHOD]
_OUTCOME_INDEX = {name: i for i, name in enumerate(OUTCOMES)}
_LATENCY_CELLS = len(LATENCY_BUCKETS) + 1  # a method's buckets, +Inf last


class _Row:
    """Offsets of one process's cells."""

    calls = 0
    latency = calls + len(METHODS) * len(OUTCOMES)  # per method: a count per bucket, +Inf
    latency_sum = latency + len(METHODS) * _LATENCY_CELLS
    request_sizes = latency_sum + len(METHODS)
    request_size_sum = request_sizes + len(REQUEST_BUCKETS) + 1
    largest_request = request_size_sum + 1  # a maximum, not a sum
    received = largest_request + 1
    sent = received + 1
    connections = sent + 1
    oversized = connections + len(CONNECTION_EVENTS)
    compactions = oversized + len(BOUNDS)  # minor, major
    reclaimed = compactions + 2
    size = reclaimed + 1


class MetricsRecorder:
    """What one process counts, into its row; thread-safe."""

    def __init__(self, cells: ctypes.Array, row: int) -> None:
        self._cells = memoryview(cells).cast("B").cast("d")  # twice as fast as ctypes indexing
        base = row * _Row.size
        self._calls = base + _Row.calls
        self._latency = base + _Row.latency
        self._latency_sum = base + _Row.latency_sum
        self._sizes = base + _Row.request_sizes
        self._size_sum = base + _Row.request_size_sum
        self._largest = base + _Row.largest_request
        self._received = base + _Row.received
        self._sent = base + _Row.sent
        self._base = base
        self._lock = threading.Lock()

    def call(self, method: str, outcome: str, seconds: float, request_bytes: int) -> None:
        """A call answered: its method, outcome, seconds from its first byte to its reply
        ready, and its size."""
        m = _METHOD_INDEX.get(method, _UNKNOWN)
        calls = self._calls + m * len(OUTCOMES) + _OUTCOME_INDEX[outcome]
        latency = self._latency + m * _LATENCY_CELLS + bisect.bisect_left(LATENCY_BUCKETS, seconds)
        size = self._sizes + bisect.bisect_left(REQUEST_BUCKETS, request_bytes)
        cells = self._cells
        with self._lock:
            cells[calls] += 1
            cells[latency] += 1
            cells[self._latency_sum + m] += seconds
            cells[size] += 1
            cells[self._size_sum] += request_bytes
            if request_bytes > cells[self._largest]:
                cells[self._largest] = request_bytes

    def transferred(self, received: int, sent: int) -> None:
        """Bytes received from and sent to a client since its last report."""
        with self._lock:
            self._cells[self._received] += received
            self._cells[self._sent] += sent

    def connection(self, event: str) -> None:
        """``admitted``, ``evicted`` (closed to admit another) or ``refused``."""
        self._add(_Row.connections + CONNECTION_EVENTS.index(event), 1)

    def oversized(self, bound: str) -> None:
        """A call refused for a ``frame`` or a ``string`` over its bound."""
        self._add(_Row.oversized + BOUNDS.index(bound), 1)

    def compacted(self, major: bool, reclaimed: int) -> None:
        """A compaction finished (``Store.on_compacted``)."""
        with self._lock:
            self._cells[self._base + _Row.compactions + int(major)] += 1
            self._cells[self._base + _Row.reclaimed] += reclaimed

    def _add(self, offset: int, amount: float) -> None:
        with self._lock:
            self._cells[self._base + offset] += amount


class GatewayMetrics:
    """The rows of every process of one gateway (created before the fork)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self._cells = RawArray(ctypes.c_double, processes * _Row.size)

    def recorder(self, row: int) -> MetricsRecorder:
        """The recorder of the process of ``row`` (create it in that process)."""
        if not 0 <= row < self.processes:
            raise ValueError(f"row must be in [0, {self.processes}), got {row}")
        return MetricsRecorder(self._cells, row)

    def totals(self) -> list[float]:
        """Every cell summed over the processes (the largest request: the largest)."""
        rows = [
            self._cells[row * _Row.size : (row + 1) * _Row.size] for row in range(self.processes)
        ]
        totals = [sum(column) for column in zip(*rows, strict=True)]
        totals[_Row.largest_request] = max(row[_Row.largest_request] for row in rows)
        return totals


class GatewayCollector:
    """The ``prometheus_client`` collector of one gateway's metrics."""

    def __init__(
        self, metrics: GatewayMetrics, slots: ConnectionSlots, data_dir: Path, workers: int
    ) -> None:
        self.metrics = metrics
        self.slots = slots
        self.data_dir = Path(data_dir)
        self.workers = workers

    def collect(self) -> Iterator[Metric]:
        totals = self.metrics.totals()
        yield from _call_families(totals)
        yield from _connection_families(totals, self.slots, self.workers)
        yield from _transfer_families(totals)
        yield from _store_families(totals, self.data_dir)


def _call_families(totals: list[float]) -> Iterator[Metric]:
    calls = CounterMetricFamily(
        "hbase_gateway_calls",
        "Thrift calls answered, by method and outcome",
        labels=["method", "outcome"],
    )
    latency = HistogramMetricFamily(
        "hbase_gateway_call_duration_seconds",
        "Seconds from a call's first byte received to its reply ready to send",
        labels=["method"],
    )
    buckets = _LATENCY_CELLS
    for m, method in enumerate(METHODS):
        for o, outcome in enumerate(OUTCOMES):
            count = totals[_Row.calls + m * len(OUTCOMES) + o]
            if count:
                calls.add_metric([method, outcome], count)
        counts = totals[_Row.latency + m * buckets : _Row.latency + (m + 1) * buckets]
        if any(counts):
            latency.add_metric(
                [method], _cumulative(LATENCY_BUCKETS, counts), totals[_Row.latency_sum + m]
            )
    yield calls
    yield latency


def _connection_families(
    totals: list[float], slots: ConnectionSlots, workers: int
) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "hbase_gateway_connections",
        "Client connections open, over every worker",
        value=sum(slots.open_connections()),
    )
    yield GaugeMetricFamily(
        "hbase_gateway_connections_max", "The connection cap (--max-connections)", value=slots.cap
    )
    yield GaugeMetricFamily(
        "hbase_gateway_workers", "Worker processes serving connections", value=workers
    )
    for i, event in enumerate(CONNECTION_EVENTS):
        yield CounterMetricFamily(
            f"hbase_gateway_connections_{event}",
            _CONNECTION_HELP[event],
            value=totals[_Row.connections + i],
        )


_CONNECTION_HELP = {
    "admitted": "Client connections admitted",
    "evicted": "Idle connections closed at the cap to admit a new client (the longest-idle)",
    "refused": "Connections closed at once: at the cap with every connection inside a call, "
    "or no thread could be started",
}


def _transfer_families(totals: list[float]) -> Iterator[Metric]:
    yield CounterMetricFamily(
        "hbase_gateway_received_bytes", "Bytes received from clients", value=totals[_Row.received]
    )
    yield CounterMetricFamily(
        "hbase_gateway_sent_bytes", "Bytes sent to clients", value=totals[_Row.sent]
    )
    sizes = HistogramMetricFamily(
        "hbase_gateway_request_bytes", "Bytes of each call received (with a frame's header)"
    )
    sizes.add_metric(
        [],
        _cumulative(REQUEST_BUCKETS, totals[_Row.request_sizes : _Row.request_size_sum]),
        totals[_Row.request_size_sum],
    )
    yield sizes
    yield GaugeMetricFamily(
        "hbase_gateway_largest_request_bytes",
        "The largest call received since the gateway started (to size --max-frame-size by)",
        value=totals[_Row.largest_request],
    )
    oversized = CounterMetricFamily(
        "hbase_gateway_oversized",
        "Calls refused for a frame (connection closed) or a string (IllegalArgument) over its "
        "bound",
        labels=["bound"],
    )
    for i, bound in enumerate(BOUNDS):
        oversized.add_metric([bound], totals[_Row.oversized + i])
    yield oversized


def _store_families(totals: list[float], data_dir: Path) -> Iterator[Metric]:
    enqueued, applied = read_counters(data_dir)
    yield GaugeMetricFamily(
        "hbase_gateway_pending_batches",
        "Acknowledged batches waiting in the pending log to be applied",
        value=max(enqueued - applied, 0),
    )
    yield CounterMetricFamily(
        "hbase_gateway_pending_batches_applied",
        "Batches applied from the pending log over the store's life (its applied sequence number)",
        value=applied,
    )
    compactions = CounterMetricFamily(
        "hbase_gateway_compactions",
        "Compactions run (background and through Thrift)",
        labels=["kind"],
    )
    compactions.add_metric(["minor"], totals[_Row.compactions])
    compactions.add_metric(["major"], totals[_Row.compactions + 1])
    yield compactions
    yield CounterMetricFamily(
        "hbase_gateway_compaction_reclaimed_cells",
        "Cell versions removed by compactions (beyond maxVersions, past the TTL)",
        value=totals[_Row.reclaimed],
    )
    size = GaugeMetricFamily(
        "hbase_gateway_store_bytes", "Bytes of the store's files", labels=["file"]
    )
    for name in STORE_FILES:
        try:
            size.add_metric([name], (data_dir / name).stat().st_size)
        except FileNotFoundError:
            continue
    yield size


def _cumulative(bounds: tuple[float, ...], counts: list[float]) -> list[tuple[str, float]]:
    running, buckets = 0.0, []
    for bound, count in zip((*bounds, float("inf")), counts, strict=True):
        running += count
        buckets.append((floatToGoString(bound), running))
    return buckets


def metrics_server(
    listener: socket.socket, collector: GatewayCollector, health: GatewayHealth
) -> ThreadingHTTPServer:
    """An HTTP server on the bound ``listener`` answering ``GET /healthz`` and ``GET /readyz``
    from ``health`` (200 ``ok``, or 503 and why) and ``GET /metrics`` (any other path); run
    ``serve_forever()`` on a thread, ``shutdown()`` to stop."""
    gateway_registry = CollectorRegistry(auto_describe=False)
    gateway_registry.register(collector)
    probes = {"/healthz": health.liveness, "/readyz": health.readiness}

    class GatewayMetricsHandler(MetricsHandler):
        registry = gateway_registry  # what MetricsHandler.factory(registry) sets
        timeout = 30

        def do_GET(self) -> None:
            probe = probes.get(self.path.partition("?")[0])
            if probe is None:
                super().do_GET()
                return
            ok, why = probe()
            body = f"{why}\n".encode()
            self.send_response(200 if ok else 503)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(
        listener.getsockname()[:2], GatewayMetricsHandler, bind_and_activate=False
    )
    server.socket.close()
    server.socket = listener
    server.daemon_threads = True
    return server
