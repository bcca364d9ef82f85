"""The pre-forked gateway: several worker processes accept on one listening socket.

One process serves every connection under one interpreter lock, so with many concurrent clients
the gateway's request handling is serialized while a real HBase serves them on many threads.
With ``--workers N`` the parent binds the socket, creates what the processes share, and forks
N workers that each accept on the inherited socket and serve their connections on threads, as
a single-process gateway does. What they share:

* the store, through SQLite (each worker opens its own ``Store`` after the fork): writes are
  serialized across processes by ``BEGIN IMMEDIATE``, so timestamps, counters and batches are
  exactly as with one process;
* a ``CatalogSignal`` (shared memory): a table created, disabled or deleted through one worker
  is seen by the next call on any other;
* ``SharedSlots`` (shared memory, a file lock, a pipe per worker): the connection cap is the
  total, and the longest-idle connection of any worker makes room for a newcomer;
* ``GatewayMetrics`` (shared memory): a row of counters per process, summed by ``/metrics``;
* ``GatewayHealth`` (shared memory): when each worker's accept loop, and the parent's own
  loop, last came back, read by ``/healthz`` and ``/readyz``.

Scanners live in the worker that opened them, as does the connection they belong to.

The parent stays single-threaded and never holds a store connection, so it can fork again at
any time to replace a worker that died. The upkeep (applying the batches the workers deferred,
background compaction) needs a store, so it runs in one more child of its own, and so does the
metrics endpoint (``--metrics-port``). Children die with the parent (``PR_SET_PDEATHSIG``), even
on SIGKILL.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import logging
import os
import select
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Callable

from .admission import SharedSlots
from .bounds import WireBounds
from .catalog import CatalogSignal
from .compaction import BackgroundCompactor
from .health import GatewayHealth
from .metrics import GatewayCollector, GatewayMetrics, MetricsRecorder, metrics_server
from .pending import PendingApplier
from .server import GatewayServer
from .store import Store

logger = logging.getLogger(__name__)

UPKEEP = -1  # the role of the upkeep child (pending batches, compaction); workers count from 0
METRICS = -2  # the role of the child serving /metrics (with --metrics-port)
MAX_RESTARTS = 5  # children restarted within RESTART_WINDOW_S before the gateway gives up
RESTART_WINDOW_S = 60.0
SHUTDOWN_TIMEOUT_S = 25.0  # then SIGKILL: within EmbeddedGateway.stop()'s 30 s
_PR_SET_PDEATHSIG = 1
_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
_BLOCKED_AT_FORK = _STOP_SIGNALS | {signal.SIGCHLD}


def default_workers() -> int:
    """One worker per core, at most 4: beyond that the workers mostly wait for SQLite's one
    writer, and each costs memory."""
    return max(1, min(os.cpu_count() or 1, 4))


class Supervisor:
    """The parent of a multi-process gateway: forks the children, restarts them, stops them."""

    def __init__(
        self,
        args: argparse.Namespace,
        listener: socket.socket,
        workers: int,
        on_ready: Callable[[], None] = lambda: None,
        metrics_listener: socket.socket | None = None,
    ) -> None:
        self.args = args
        self.listener = listener
        self.metrics_listener = metrics_listener
        self.workers = workers
        self.on_ready = on_ready
        self.slots = SharedSlots(args.max_connections, workers)
        self.metrics = GatewayMetrics(workers + 1)  # a row per worker, then the upkeep's
        self.catalog_signal = CatalogSignal()
        self.health = GatewayHealth(workers, args.liveness_timeout, supervised=True)
        self.host, self.port = listener.getsockname()[:2]
        self._children: dict[int, int] = {}  # pid -> role (worker index, UPKEEP or METRICS)
        self._restarts: deque[float] = deque()
        self._stopping = False
        self._failed = False

    def run(self) -> int:
        """Serve until SIGTERM, SIGINT, stdin EOF (``--exit-with-stdin``) or a crash loop."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        signal.set_wakeup_fd(wake_w)
        for signum in _STOP_SIGNALS:
            signal.signal(signum, self._stop_signal)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # only to wake the loop (wakeup fd)
        try:
            for index in range(self.workers):
                self._spawn(index)
            if self.args.defer_batches_from or self.args.compact_after_cells:
                self._spawn(UPKEEP)
            if self.metrics_listener is not None:
                self._spawn(METRICS)
            self.on_ready()
            watch_stdin = bool(self.args.exit_with_stdin)
            while not self._stopping:
                self.health.beat(self.workers)
                watched = [wake_r, 0] if watch_stdin else [wake_r]
                readable, _, _ = select.select(watched, [], [], 1.0)
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 4096)
                if 0 in readable and not _read_stdin():
                    logger.info("stdin closed: shutting down")
                    self._stopping = True
                self._reap()
            return self._shutdown()
        finally:
            signal.set_wakeup_fd(-1)
            os.close(wake_r)
            os.close(wake_w)

    def _stop_signal(self, signum: int, _frame: object) -> None:
        self._stopping = True

    def _spawn(self, role: int) -> None:
        """Fork a child with the stop signals blocked, so none arrives before its handlers."""
        parent = os.getpid()
        signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED_AT_FORK)
        try:
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    _die_with_parent(parent)
                    code = self._child(role)
                except BaseException:
                    logger.exception("hbase-gateway %s failed", _role_name(role))
                finally:
                    for handler in logging.getLogger().handlers:
                        with contextlib.suppress(Exception):
                            handler.flush()
                    os._exit(code)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _BLOCKED_AT_FORK)
        self._children[pid] = role

    def _child(self, role: int) -> int:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if role == UPKEEP:
            return self._run_upkeep()
        if role == METRICS:
            return self._run_metrics()
        self.slots.bind(role)
        recorder = self.metrics.recorder(role)
        store = self._store(recorder)
        try:
            server = GatewayServer(
                store,
                transport=self.args.transport,
                protocol=self.args.protocol,
                idle_timeout_s=self.args.idle_timeout,
                listener=self.listener,
                slots=self.slots,
                bounds=WireBounds(self.args.max_frame_size, self.args.max_string_size),
                metrics=recorder,
                on_turn=lambda: self.health.beat(role),
                on_stop=lambda: self.health.stopped(role),
            )
            for signum in _STOP_SIGNALS:
                signal.signal(signum, lambda *_: server.shutdown())
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _BLOCKED_AT_FORK)
            logger.debug("worker %d serving (pid=%d)", role, os.getpid())
            server.serve_forever()
        finally:
            store.close()
        return 0

    def _store(self, recorder: MetricsRecorder) -> Store:
        store = Store(
            self.args.data_dir,
            catalog_signal=self.catalog_signal,
            deferred_batch_mutations=self.args.defer_batches_from,
        )
        store.on_compacted = recorder.compacted
        return store

    def _run_upkeep(self) -> int:
        """Apply the workers' deferred batches and compact, away from the serving processes."""
        self.listener.close()
        store = self._store(self.metrics.recorder(self.workers))
        try:
            stop_upkeep = start_upkeep(store, self.args)  # its threads keep the signals blocked
            signal.sigwait(_STOP_SIGNALS)
            stop_upkeep()
        finally:
            store.close()
        return 0

    def _run_metrics(self) -> int:
        """Serve ``/metrics`` until SIGTERM, reading what every other process counted."""
        self.listener.close()
        assert self.metrics_listener is not None
        collector = GatewayCollector(self.metrics, self.slots, self.args.data_dir, self.workers)
        server = metrics_server(self.metrics_listener, collector, self.health)
        serving = threading.Thread(target=server.serve_forever, name="hbase-gateway-metrics")
        serving.start()  # the thread keeps the stop signals blocked: sigwait takes them
        signal.sigwait(_STOP_SIGNALS)
        server.shutdown()
        serving.join()
        server.server_close()
        return 0

    def _reap(self) -> None:
        """Collect exited children; replace them unless stopping (at a bounded rate)."""
        while self._children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            role = self._children.pop(pid, None)
            if role is None:
                continue
            if role >= 0:
                self.slots.reset(role)
                self.health.restarting(role)
            if self._stopping:
                continue
            logger.error(
                "hbase-gateway %s (pid %d) %s; starting another",
                _role_name(role),
                pid,
                _exit_reason(status),
            )
            now = time.monotonic()
            self._restarts.append(now)
            while self._restarts and self._restarts[0] < now - RESTART_WINDOW_S:
                self._restarts.popleft()
            if len(self._restarts) > MAX_RESTARTS:
                logger.error(
                    "more than %d restarts within %.0f s: shutting the gateway down",
                    MAX_RESTARTS,
                    RESTART_WINDOW_S,
                )
                self._stopping = self._failed = True
                return
            self._spawn(role)

    def _shutdown(self) -> int:
        """SIGTERM every child (each finishes its calls in flight and closes its store), wait,
        then SIGKILL what is left. The metrics process goes last: ``/readyz`` answers
        "stopping" while the others finish."""
        self.health.stopping()
        self.health.stopped(self.workers)
        self.listener.close()
        if self.metrics_listener is not None:
            self.metrics_listener.close()
        deadline = time.monotonic() + SHUTDOWN_TIMEOUT_S
        for last in (False, True):
            for pid, role in self._children.items():
                if (role == METRICS) == last:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGTERM)
            while any((role == METRICS) == last for role in self._children.values()):
                if time.monotonic() >= deadline:
                    break
                self._reap()
                time.sleep(0.02)
        for pid in list(self._children):
            logger.error("hbase-gateway child %d did not stop in time: killed", pid)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
            self._children.pop(pid)
        return 1 if self._failed else 0


def start_upkeep(store: Store, args: argparse.Namespace) -> Callable[[], None]:
    """Start the store's background work that ``args`` turns on (applying deferred batches,
    compaction), on threads; returns the function that stops it."""
    applier = PendingApplier(store).start() if args.defer_batches_from else None
    compactor = (
        BackgroundCompactor(
            store, args.compact_after_cells, args.compact_interval, args.compact_quiet
        ).start()
        if args.compact_after_cells
        else None
    )

    def stop() -> None:
        for started in (compactor, applier):
            if started is not None:
                started.stop()

    return stop


def _die_with_parent(parent: int) -> None:
    """Have the kernel SIGKILL this child when the parent dies; if it already has (between
    the fork and here), exit now."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent:
        os._exit(1)


def _read_stdin() -> bool:
    """False at EOF. Raw ``os.read``: nothing buffered is left behind."""
    try:
        return bool(os.read(0, 4096))
    except OSError:
        return False


def _role_name(role: int) -> str:
    return {UPKEEP: "upkeep process", METRICS: "metrics process"}.get(role, f"worker {role}")


def _exit_reason(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"
