"""``profiles hbase-gateway``: run the embedded HBase Thrift-1 gateway in the foreground."""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from profile_store.cli_conventions import (
    port_number,
    positive_int,
    positive_number,
    whole_number,
)

from .compaction import (
    DEFAULT_AFTER_CELLS,
    DEFAULT_INTERVAL_S,
    DEFAULT_QUIET_S,
)
from .server import (
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_MAX_CONNECTIONS,
    PROTOCOLS,
    TRANSPORTS,
    GatewayServer,
    bind_listener,
)
from .store import DEFERRED_BATCH_MUTATIONS, Store
from .workers import Supervisor, default_workers, start_upkeep

logger = logging.getLogger("profile_store.hbase_gateway")


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--data-dir", required=True, type=Path, help="directory of the store")
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
        help="client connections served at once; further ones are closed at once "
        "(default %(default)s)",
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
    """Register the ``hbase-gateway`` sub-command on the ``profiles`` CLI."""
    parser = subparsers.add_parser(
        "hbase-gateway",
        help="serve HBase's Thrift-1 API (happybase) from an embedded durable store",
        description=(
            "Embedded HBase Thrift-1 gateway: unmodified happybase clients talk to it as to "
            "HBase's Thrift server. SIGTERM shuts it down gracefully."
        ),
    )
    return configure_parser(parser)


def run(args: argparse.Namespace) -> int:
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=args.log_level.upper(),
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
    if args.workers > 1:
        return _run_workers(args)
    store = Store(args.data_dir, deferred_batch_mutations=args.defer_batches_from)
    try:
        server = GatewayServer(
            store,
            host=args.host,
            port=args.port,
            transport=args.transport,
            protocol=args.protocol,
            max_connections=args.max_connections,
            idle_timeout_s=args.idle_timeout,
        )
    except BaseException:
        store.close()
        raise
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: server.shutdown())
    if args.exit_with_stdin:
        threading.Thread(target=_shutdown_on_eof, args=(server,), daemon=True).start()
    _log_listening(args, server.address, 1)
    if args.ready_file is not None:
        _write_ready_file(args.ready_file, server.host, server.port)
    stop_upkeep = start_upkeep(store, args)
    try:
        server.serve_forever()
    finally:
        stop_upkeep()
        store.close()
        logger.info("hbase-gateway on %s stopped", server.address)
    return 0


def _run_workers(args: argparse.Namespace) -> int:
    """Bind, then fork the workers (``workers.Supervisor``). The store is created here first,
    so workers never race to create its schema, and closed before any fork."""
    Store(args.data_dir).close()
    listener = bind_listener(args.host, args.port)
    supervisor = Supervisor(args, listener, args.workers)
    address = f"{supervisor.host}:{supervisor.port}"

    def ready() -> None:
        _log_listening(args, address, args.workers)
        if args.ready_file is not None:
            _write_ready_file(args.ready_file, supervisor.host, supervisor.port)

    supervisor.on_ready = ready
    try:
        code = supervisor.run()
    finally:
        listener.close()
    logger.info("hbase-gateway on %s stopped", address)
    return code


def _log_listening(args: argparse.Namespace, address: str, workers: int) -> None:
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


def _shutdown_on_eof(server: GatewayServer) -> None:
    """Raw ``os.read``: a buffered stdin reader would block interpreter shutdown on its lock."""
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    finally:
        server.shutdown()


def _write_ready_file(path: Path, host: str, port: int) -> None:
    """Atomically publish the bound address, so a watcher never reads half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"host": host, "port": port, "pid": os.getpid()}))
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = configure_parser(argparse.ArgumentParser(prog="python -m profile_store.hbase_gateway"))
    args = parser.parse_args(argv)
    return int(args.func(args))
