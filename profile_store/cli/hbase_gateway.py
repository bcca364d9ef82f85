"""``profiles hbase-gateway``: run the embedded HBase Thrift-1 gateway in the foreground.

This is also the gateway process's own program (``python -m profile_store.cli.hbase_gateway``,
what ``hbase_gateway.process.EmbeddedGateway`` starts): its options, and how one process or a
supervisor of worker processes is put together from the gateway's parts; and ``backup`` and
``restore`` of its store. Exit codes as the other commands' (``conventions``, not imported here:
happybase would cost the gateway's start half a second): 1 for a store refused or a backup or
restore that failed, 2 for a missing ``--data-dir``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import sqlite3
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from profile_store.cli.argument_types import (
    port_number,
    positive_int,
    positive_number,
    whole_number,
)
from profile_store.hbase_gateway.backup import BackupError, backup, restore
from profile_store.hbase_gateway.bounds import (
    DEFAULT_MAX_FRAME_BYTES,
    DEFAULT_MAX_STRING_BYTES,
    WireBounds,
)
from profile_store.hbase_gateway.compaction import (
    DEFAULT_AFTER_CELLS,
    DEFAULT_INTERVAL_S,
    DEFAULT_QUIET_S,
)
from profile_store.hbase_gateway.health import DEFAULT_LIVENESS_TIMEOUT_S, GatewayHealth
from profile_store.hbase_gateway.metrics import GatewayCollector, GatewayMetrics, metrics_server
from profile_store.hbase_gateway.server import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    PROTOCOLS,
    TRANSPORTS,
    GatewayServer,
    bind_listener,
)
from profile_store.hbase_gateway.store import DEFERRED_BATCH_MUTATIONS, Store
from profile_store.hbase_gateway.store_format import StoreFormatError
from profile_store.hbase_gateway.store_lock import StoreInUse
from profile_store.hbase_gateway.workers import Supervisor, default_workers, start_upkeep

logger = logging.getLogger("profile_store.hbase_gateway")


def configure_parser(
    parser: argparse.ArgumentParser, data_dir_required: bool = True
) -> argparse.ArgumentParser:
    """The gateway's options; ``data_dir_required=False`` where sub-commands follow (each with
    its own ``--data-dir``), then ``run`` checks it."""
    parser.add_argument(
        "--data-dir", required=data_dir_required, type=Path, help="directory of the store"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=port_number, default=9090, help="TCP port; 0 picks a free one (default 9090)"
    )
    parser.add_argument(
        "--transport",
        choices=sorted(TRANSPORTS),
        default="buffered",
        help="Thrift transport: buffered as `hbase thrift start`, framed for -f (default "
        "%(default)s)",
    )
    parser.add_argument(
        "--protocol",
        choices=sorted(PROTOCOLS),
        default="binary",
        help="Thrift protocol: binary, or compact as `hbase thrift start -c` (default %(default)s)",
    )
    parser.add_argument(
        "--max-connections",
        type=positive_int,
        default=DEFAULT_MAX_CONNECTIONS,
        help="client connections served at once, over every worker; at the cap the longest-idle "
        "connection is closed to admit a new one (default %(default)s)",
    )
    parser.add_argument(
        "--max-frame-size",
        type=positive_int,
        default=DEFAULT_MAX_FRAME_BYTES,
        metavar="BYTES",
        help="bytes of one call (with --transport framed, of one frame); a connection sending "
        "more is closed and logged (default %(default)s)",
    )
    parser.add_argument(
        "--max-string-size",
        type=positive_int,
        default=DEFAULT_MAX_STRING_BYTES,
        metavar="BYTES",
        help="bytes of one string or value in a call; a call holding a longer one fails with "
        "IllegalArgument (default %(default)s, HBase's hbase.client.keyvalue.maxsize)",
    )
    parser.add_argument(
        "--metrics-port",
        type=port_number,
        default=None,
        metavar="PORT",
        help="serve Prometheus metrics at http://HOST:PORT/metrics, and the liveness and "
        "readiness probes /healthz and /readyz; 0 picks a free port (default: off)",
    )
    parser.add_argument(
        "--liveness-timeout",
        type=positive_number,
        default=DEFAULT_LIVENESS_TIMEOUT_S,
        metavar="SECONDS",
        help="/healthz answers 503 once an accept loop (of a worker, or the supervisor's) has "
        "not come back for this long; a loop turns at least every second (default %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=default_workers(),
        metavar="N",
        help="processes serving connections, each with its own store connections and threads "
        "(Python runs one thread at a time per process); 1 serves everything in this process "
        "(default: the CPU count, at most 4; here %(default)s)",
    )
    parser.add_argument(
        "--idle-timeout",
        type=positive_number,
        default=DEFAULT_IDLE_TIMEOUT_S,
        metavar="SECONDS",
        help="close a connection idle this long (default %(default)s)",
    )
    parser.add_argument(
        "--defer-batches-from",
        type=whole_number,
        default=DEFERRED_BATCH_MUTATIONS,
        metavar="N",
        help="acknowledge a mutateRows call of at least N mutations once it is in the pending "
        "log and apply it in the background (reads and other writes always see it); 0 applies "
        "every batch before replying (default %(default)s)",
    )
    parser.add_argument(
        "--compact-after-cells",
        type=whole_number,
        default=DEFAULT_AFTER_CELLS,
        metavar="N",
        help="compact a table in the background once at least N cells (and half of what it "
        "stored after its last compaction) were written to it; 0 turns background compaction "
        "off (default %(default)s)",
    )
    parser.add_argument(
        "--compact-interval",
        type=positive_number,
        default=DEFAULT_INTERVAL_S,
        metavar="SECONDS",
        help="how often the background compaction looks for tables due (default %(default)s)",
    )
    parser.add_argument(
        "--compact-quiet",
        type=positive_number,
        default=DEFAULT_QUIET_S,
        metavar="SECONDS",
        help="a table due waits until no batch was written to it for this long, unless it was "
        "written four times the amount due (default %(default)s)",
    )
    parser.add_argument(
        "--ready-file",
        type=Path,
        help="write {host, port, pid} as JSON here once listening (for supervisors)",
    )
    parser.add_argument(
        "--exit-with-stdin",
        action="store_true",
        help="shut down when stdin reaches EOF, i.e. when the parent process dies",
    )
    parser.add_argument(
        "--log-level", default="INFO", help="Python logging level (default %(default)s)"
    )
    parser.set_defaults(func=run)
    return parser


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``hbase-gateway`` sub-command on the ``profiles`` CLI, with its ``backup``
    and ``restore`` commands."""
    parser = subparsers.add_parser(
        "hbase-gateway",
        help="serve HBase's Thrift-1 API (happybase) from an embedded durable store",
        description=(
            "Embedded HBase Thrift-1 gateway: unmodified happybase clients talk to it as to "
            "HBase's Thrift server. SIGTERM shuts it down gracefully. `backup` and `restore` "
            "copy its store."
        ),
    )
    configure_parser(parser, data_dir_required=False)
    commands = parser.add_subparsers(dest="gateway_command", metavar="COMMAND")
    backup_parser = commands.add_parser(
        "backup",
        help="copy the store into one file while gateways serve and write it",
        description="Copy the store of --data-dir, as of one moment, into a new SQLite file "
        "while gateways serve it (every write acknowledged before the command started is in "
        "it). Restore it with `profiles hbase-gateway restore`.",
    )
    backup_parser.add_argument(
        "--data-dir", required=True, type=Path, help="directory of the store"
    )
    backup_parser.add_argument(
        "--to", required=True, type=Path, metavar="FILE", help="the backup file (must not exist)"
    )
    backup_parser.set_defaults(func=run_backup)
    restore_parser = commands.add_parser(
        "restore",
        help="make a backup the store of a data directory no gateway runs on",
        description="Copy a backup made by `profiles hbase-gateway backup` into --data-dir as "
        "its store. Refused while a gateway has the store there open, and over an existing "
        "store unless --replace.",
    )
    restore_parser.add_argument(
        "--from", dest="source", required=True, type=Path, metavar="FILE", help="the backup file"
    )
    restore_parser.add_argument(
        "--data-dir", required=True, type=Path, help="directory of the store to restore into"
    )
    restore_parser.add_argument(
        "--replace",
        action="store_true",
        help="overwrite the store already in --data-dir (what it holds is lost)",
    )
    restore_parser.set_defaults(func=run_restore)
    return parser


def run_backup(args: argparse.Namespace) -> int:
    try:
        report = backup(args.data_dir, args.to)
    except (BackupError, StoreFormatError, sqlite3.Error, OSError) as error:
        print(f"profiles hbase-gateway backup: {error}", file=sys.stderr)
        return 1
    print(
        f"backed up {args.data_dir} to {report.path} ({report.size_bytes} bytes; "
        f"{report.applied_batches} acknowledged batches applied to the copy)"
    )
    return 0


def run_restore(args: argparse.Namespace) -> int:
    try:
        store = restore(args.source, args.data_dir, replace=args.replace)
    except (BackupError, StoreFormatError, StoreInUse, OSError) as error:
        print(f"profiles hbase-gateway restore: {error}", file=sys.stderr)
        return 1
    print(f"restored {args.source} into {store}")
    return 0


def run(args: argparse.Namespace) -> int:
    if args.data_dir is None:
        print("profiles hbase-gateway: --data-dir is required", file=sys.stderr)
        return 2
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=args.log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
    try:
        if args.workers > 1:
            return _run_workers(args)
        return _run_one_process(args)
    except (StoreFormatError, StoreInUse) as error:
        print(f"hbase-gateway: {error}", file=sys.stderr)
        return 1


def _run_one_process(args: argparse.Namespace) -> int:
    metrics = GatewayMetrics(1)
    recorder = metrics.recorder(0)
    health = GatewayHealth(1, args.liveness_timeout)
    store = Store(args.data_dir, deferred_batch_mutations=args.defer_batches_from)
    store.on_compacted = recorder.compacted
    metrics_listener = None
    try:
        server = GatewayServer(
            store,
            host=args.host,
            port=args.port,
            transport=args.transport,
            protocol=args.protocol,
            max_connections=args.max_connections,
            idle_timeout_s=args.idle_timeout,
            bounds=WireBounds(args.max_frame_size, args.max_string_size),
            metrics=recorder,
            on_turn=lambda: health.beat(0),
            on_stop=lambda: health.stopped(0),
        )
        metrics_listener = _bind_metrics(args)
    except BaseException:
        store.close()
        raise
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.shutdown())
    if args.exit_with_stdin:
        threading.Thread(target=_shutdown_on_eof, args=(server,), daemon=True).start()
    stop_metrics = _serve_metrics(
        metrics_listener, GatewayCollector(metrics, server.slots, args.data_dir, 1), health
    )
    _log_listening(args, server.address, 1, metrics_listener)
    if args.ready_file is not None:
        _write_ready_file(args.ready_file, server.host, server.port, metrics_listener)
    stop_upkeep = start_upkeep(store, args)
    try:
        server.serve_forever()
    finally:
        stop_metrics()
        stop_upkeep()
        store.close()
        logger.info("hbase-gateway on %s stopped", server.address)
    return 0


def _bind_metrics(args: argparse.Namespace) -> socket.socket | None:
    """The metrics endpoint's socket, bound before serving (and before any fork), so a port
    in use fails the start and ``--metrics-port 0`` is known to the ready file."""
    return None if args.metrics_port is None else bind_listener(args.host, args.metrics_port)


def _serve_metrics(
    listener: socket.socket | None, collector: GatewayCollector, health: GatewayHealth
) -> Callable[[], None]:
    """Serve ``/metrics``, ``/healthz`` and ``/readyz`` on a thread of this process; returns
    the function that stops it."""
    if listener is None:
        return lambda: None
    server = metrics_server(listener, collector, health)
    serving = threading.Thread(
        target=server.serve_forever, name="hbase-gateway-metrics", daemon=True
    )
    serving.start()

    def stop() -> None:
        server.shutdown()
        serving.join()
        server.server_close()

    return stop


def _run_workers(args: argparse.Namespace) -> int:
    """Bind, then fork the workers (``workers.Supervisor``). The store is created here first,
    so workers never race to create its schema, and closed before any fork."""
    Store(args.data_dir).close()
    listener = bind_listener(args.host, args.port)
    try:
        metrics_listener = _bind_metrics(args)
    except BaseException:
        listener.close()
        raise
    supervisor = Supervisor(args, listener, args.workers, metrics_listener=metrics_listener)
    address = f"{supervisor.host}:{supervisor.port}"

    def ready() -> None:
        _log_listening(args, address, args.workers, metrics_listener)
        if args.ready_file is not None:
            _write_ready_file(args.ready_file, supervisor.host, supervisor.port, metrics_listener)

    supervisor.on_ready = ready
    try:
        code = supervisor.run()
    finally:
        listener.close()
        if metrics_listener is not None:
            metrics_listener.close()
    logger.info("hbase-gateway on %s stopped", address)
    return code


def _log_listening(
    args: argparse.Namespace,
    address: str,
    workers: int,
    metrics_listener: socket.socket | None,
) -> None:
    logger.info(
        "hbase-gateway listening on %s (transport=%s, protocol=%s, data_dir=%s, pid=%d, "
        "workers=%d)",
        address,
        args.transport,
        args.protocol,
        args.data_dir,
        os.getpid(),
        workers,
    )
    if metrics_listener is not None:
        host, port = metrics_listener.getsockname()[:2]
        logger.info("hbase-gateway metrics at http://%s:%d/metrics", host, port)


def _shutdown_on_eof(server: GatewayServer) -> None:
    """Raw ``os.read``: a buffered stdin reader would block interpreter shutdown on its lock."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    finally:
        server.shutdown()


def _write_ready_file(
    path: Path, host: str, port: int, metrics_listener: socket.socket | None
) -> None:
    """Atomically publish the bound address (and the metrics port, if served), so a watcher
    never reads half a file."""
    ready: dict[str, object] = {"host": host, "port": port, "pid": os.getpid()}
    if metrics_listener is not None:
        ready["metrics_port"] = metrics_listener.getsockname()[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(ready))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = configure_parser(
        argparse.ArgumentParser(prog="python -m profile_store.cli.hbase_gateway")
    )
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
