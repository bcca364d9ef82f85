"""``profiles audience``: estimate an audience from the command line, or serve the HTTP API.

```
profiles audience estimate query.json          # readable answer
profiles audience estimate - --json < q.json   # one JSON object, for machines
profiles audience serve --host 127.0.0.1 --port 8080 --tenants tenants.json
```

Exit codes: 0 answered; 2 the query (or another input) is wrong, the message names the JSON
path; 1 HBase could not be used. HBase settings come from the environment (``HBASE_THRIFT_*``,
``HBASE_TABLE_PREFIX``, ``PROFILES_HBASE_DATA_DIR``); the ``--hbase-*`` flags override it; with no
host an embedded gateway runs over the data directory for the duration of the command.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from thriftpy2.thrift import TException

from profile_store.audiences.engine import AudienceEngine, AudienceEstimate
from profile_store.audiences.query import QueryError
from profile_store.audiences.tenants import TenantConfigError, Tenants, admissible_query
from profile_store.hbase_client import (
    PROTOCOLS,
    TRANSPORTS,
    HBaseSettings,
    hbase_pool,
    sketch_table_opener,
)
from profile_store.hbase_gateway.process import GatewayStartError

EXIT_OK = 0
EXIT_FAILURE = 1  # HBase unusable, or the server could not start
EXIT_INPUT = 2

logger = logging.getLogger(__name__)


class InputError(Exception):
    """A command input (file, JSON, settings) is unusable; ``path`` is the JSON path if any."""

    def __init__(self, error: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.path = path


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``audience`` sub-command on the ``profiles`` CLI."""
    parser = subparsers.add_parser(
        "audience",
        help="estimate audience sizes from the HBase sketches, or serve the HTTP API",
        description="Audience size estimates: one query from a file, or an HTTP service.",
    )
    return configure_parser(parser)


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    commands = parser.add_subparsers(dest="audience_command", required=True)

    estimate = commands.add_parser(
        "estimate",
        help="answer one audience query (JSON file or stdin)",
        description="Estimate the audience of a JSON query tree (see examples/"
        "audience_query.json). Exit codes: 0 answered, 1 HBase unusable, 2 bad query.",
    )
    estimate.add_argument("query", metavar="FILE|-", help="the query JSON file; - reads stdin")
    estimate.add_argument(
        "--json",
        dest="as_json",
        action="store_true",
        help="print the answer (and errors, on stderr) as one JSON object",
    )
    _add_hbase_options(estimate)
    estimate.set_defaults(func=run_estimate)

    serve = commands.add_parser(
        "serve",
        help="serve POST /v1/audiences/estimate and GET /v1/health (OpenAPI at /docs)",
        description="Run the audience HTTP service with uvicorn until SIGINT/SIGTERM.",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    serve.add_argument(
        "--port", type=int, default=8080, help="TCP port; 0 picks a free one (default %(default)s)"
    )
    serve.add_argument(
        "--tenants",
        type=Path,
        required=True,
        help="tenants JSON: API keys and the app_ids each may query (see examples/tenants.json)",
    )
    serve.add_argument("--log-level", default="info", help="logging level (default %(default)s)")
    _add_hbase_options(serve)
    serve.set_defaults(func=run_serve)
    return parser


def _add_hbase_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "HBase", "override the HBASE_THRIFT_* / PROFILES_HBASE_DATA_DIR environment variables"
    )
    group.add_argument("--hbase-host", help="Thrift server host; unset: embedded gateway")
    group.add_argument("--hbase-port", type=int, help="Thrift server port (default 9090)")
    group.add_argument("--hbase-transport", choices=TRANSPORTS)
    group.add_argument("--hbase-protocol", choices=PROTOCOLS)
    group.add_argument("--hbase-table-prefix", help="prefix of every table name")
    group.add_argument("--hbase-pool-size", type=int, help="pooled connections (default 4)")
    group.add_argument("--hbase-timeout-ms", type=int, help="socket timeout (default: none)")
    group.add_argument("--hbase-data-dir", help="embedded gateway's store (default data/hbase)")


def settings_from_args(args: argparse.Namespace, environ: Any = None) -> HBaseSettings:
    """The environment's settings with every given ``--hbase-*`` flag applied."""
    try:
        return HBaseSettings.from_env(
            environ,
            host=args.hbase_host,
            port=args.hbase_port,
            transport=args.hbase_transport,
            protocol=args.hbase_protocol,
            table_prefix=args.hbase_table_prefix,
            pool_size=args.hbase_pool_size,
            timeout_ms=args.hbase_timeout_ms,
            data_dir=args.hbase_data_dir,
        )
    except ValueError as exc:
        raise InputError("invalid_settings", f"HBase settings: {exc}") from None


def read_query(source: str) -> Any:
    """The decoded JSON of ``source`` (a path, or ``-`` for stdin)."""
    name = "stdin" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("unreadable_query", f"cannot read {name}: {exc}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError("invalid_json", f"{name}: the JSON is nested too deeply", "$") from None
    except ValueError as exc:
        raise InputError("invalid_json", f"{name}: not valid JSON: {exc}", "$") from None


def run_estimate(args: argparse.Namespace) -> int:
    try:
        tree = read_query(args.query)
        admissible_query(tree)  # a wrong query fails before any HBase work starts
        settings = settings_from_args(args)
        with hbase_pool(settings) as pool:
            answer = AudienceEngine(sketch_table_opener(pool)).estimate(tree)
    except QueryError as exc:
        return _fail(args, EXIT_INPUT, "invalid_query", exc.problem, exc.path)
    except InputError as exc:
        return _fail(args, EXIT_INPUT, exc.error, exc.message, exc.path)
    except (GatewayStartError, TException, OSError) as exc:
        return _fail(args, EXIT_FAILURE, "hbase_unavailable", f"HBase: {exc}")
    if args.as_json:
        print(json.dumps(answer.to_dict()))
    else:
        print(format_estimate(answer))
    return EXIT_OK


def _fail(
    args: argparse.Namespace, code: int, error: str, message: str, path: str | None = None
) -> int:
    if args.as_json:
        print(json.dumps({"error": error, "message": message, "path": path}), file=sys.stderr)
    elif path:
        print(f"query error at {path}: {message}", file=sys.stderr)
    else:
        print(f"error: {message}", file=sys.stderr)
    return code


def format_estimate(answer: AudienceEstimate) -> str:
    """The answer for a human reader, one fact per line."""
    kind = "exact" if answer.exact else "estimated"
    lines = [
        f"audience   {answer.estimate:,.0f} users ({kind})",
        f"95% range  {answer.lower_95:,.0f} to {answer.upper_95:,.0f}",
        f"rows read  {answer.rows_read:,}",
        f"time       {answer.elapsed_ms:,.1f} ms",
    ]
    lines += [f"warning    {warning}" for warning in answer.warnings]
    return "\n".join(lines)


def run_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from profile_store.audiences.http_api import create_app

    try:
        tenants = Tenants.from_file(args.tenants)
        settings = settings_from_args(args)
    except TenantConfigError as exc:
        print(f"error: tenants: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except InputError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_INPUT
    level = args.log_level.upper()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    server: uvicorn.Server | None = None
    try:
        with _stop_on_signals(), hbase_pool(settings) as pool:
            app = create_app(AudienceEngine(sketch_table_opener(pool)), tenants)
            logger.info(
                "audience service: %d tenants, HBase: %s", len(tenants), settings.describe()
            )
            server = uvicorn.Server(
                uvicorn.Config(app, host=args.host, port=args.port, log_level=level.lower())
            )
            server.run()
    except _Stopped as stopped:
        logger.info("audience service stopped by %s", stopped)
    except (GatewayStartError, TException, OSError) as exc:
        print(f"error: HBase: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK if server is not None and server.started else EXIT_FAILURE


class _Stopped(Exception):
    """SIGINT or SIGTERM: uvicorn shuts down gracefully, then re-raises the signal."""


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signal.Signals(signum).name)


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Turn the re-raised signal into ``_Stopped``, so the pool and gateway are closed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    parser = configure_parser(argparse.ArgumentParser(prog="profiles audience"))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
