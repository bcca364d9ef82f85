"""What every ``profiles`` command that reads HBase shares: exit codes, HBase flags, error output.

Exit codes: 0 done; 1 HBase could not be used (or a server could not start); 2 an input is
wrong, the message says which. HBase settings come from the environment (``HBASE_THRIFT_*``,
``HBASE_TABLE_PREFIX``, ``PROFILES_HBASE_DATA_DIR``); the ``--hbase-*`` flags override it; with no
host an embedded gateway runs over the data directory for the duration of the command. With
``--json`` an error is one JSON object ``{"error", "message", "path"}`` on stderr, the HTTP
service's error body.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import happybase
from thriftpy2.thrift import TException

from profile_store.cli.argument_types import positive_int
from profile_store.hbase.pool import hbase_pool
from profile_store.hbase.settings import PROTOCOLS, TRANSPORTS, HBaseSettings
from profile_store.hbase_gateway.data_dir import DB_FILE
from profile_store.hbase_gateway.process import GatewayStartError

EXIT_OK = 0
EXIT_FAILURE = 1  # HBase unusable, or the server could not start
EXIT_INPUT = 2

HBASE_FAILURES = (GatewayStartError, TException, OSError)
"""What an unusable HBase raises: the gateway did not start, Thrift failed, the socket failed."""


class InputError(Exception):
    """A command input (file, JSON, settings) is unusable; ``path`` is the JSON path if any."""

    def __init__(self, error: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.path = path


class MissingTable(Exception):
    """The table a command reads is not in the HBase the settings point at."""


def missing_table_message(settings: HBaseSettings, table: str) -> str:
    """Where the table was looked for, and how to point the command elsewhere."""
    if settings.embedded:
        where = f"the embedded HBase store at {Path(settings.data_dir).resolve()}"
        how = (
            "run the command from the repository root after `make demo`, or point "
            "--hbase-data-dir (PROFILES_HBASE_DATA_DIR) at the store the assets wrote, or "
            "--hbase-host (HBASE_THRIFT_HOST) at a Thrift server"
        )
    else:
        prefix = f" with table prefix {settings.table_prefix!r}" if settings.table_prefix else ""
        where = f"the HBase Thrift server at {settings.host}:{settings.port}{prefix}"
        how = (
            "materialize the assets against it, or point --hbase-host / --hbase-table-prefix "
            "at the HBase that holds the table"
        )
    return f"no {table!r} table in {where}; {how}"


def require_table_store(settings: HBaseSettings, table: str) -> None:
    """Refuse to read from an embedded store that does not exist yet.

    Starting the gateway there would create an empty store (a stray ``data/hbase`` wherever the
    command was run) only to answer "table not found".
    """

    if settings.embedded and not (Path(settings.data_dir) / DB_FILE).exists():
        raise MissingTable(missing_table_message(settings, table))


def is_table_not_found(exc: BaseException) -> bool:
    """HBase's (and the gateway's) answer for a table that does not exist."""
    return "TableNotFoundException" in str(exc)


def add_hbase_options(parser: argparse.ArgumentParser) -> None:
    """The ``--hbase-*`` flags, each overriding one environment variable."""
    group = parser.add_argument_group(
        "HBase", "override the HBASE_THRIFT_* / PROFILES_HBASE_DATA_DIR environment variables"
    )
    group.add_argument("--hbase-host", help="Thrift server host; unset: embedded gateway")
    group.add_argument("--hbase-port", type=positive_int, help="Thrift server port (default 9090)")
    group.add_argument(
        "--hbase-transport", choices=TRANSPORTS, help="Thrift transport (default buffered)"
    )
    group.add_argument(
        "--hbase-protocol", choices=PROTOCOLS, help="Thrift protocol (default binary)"
    )
    group.add_argument("--hbase-table-prefix", help="prefix of every table name")
    group.add_argument(
        "--hbase-pool-size", type=positive_int, help="pooled connections (default 4)"
    )
    group.add_argument(
        "--hbase-timeout-ms", type=positive_int, help="socket timeout (default: none)"
    )
    group.add_argument("--hbase-data-dir", help="embedded gateway's store (default data/hbase)")


def shorten_usage(parser: argparse.ArgumentParser) -> None:
    """The usage line without the eight ``--hbase-*`` flags: ``[HBase options]`` stands for them
    (``--help`` still lists each one). Call once every argument is added."""

    def usage_of(actions: list[argparse.Action]) -> str:
        formatter = parser._get_formatter()
        formatter.add_usage(None, actions, [], prefix="")
        return " ".join(formatter.format_help().split())

    shown = [action for action in parser._actions if not action.dest.startswith("hbase_")]
    options = usage_of([action for action in shown if action.option_strings])
    positionals = usage_of([action for action in shown if not action.option_strings])
    parser.usage = f"{options} [HBase options]{positionals.removeprefix(parser.prog)}"


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """``--json``: the answer on stdout, and errors on stderr, as one JSON object each."""
    parser.add_argument(
        "--json",
        dest="as_json",
        action="store_true",
        help="print the answer (and errors, on stderr) as one JSON object",
    )


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


@contextlib.contextmanager
def table_pool(args: argparse.Namespace, table: str) -> Iterator[happybase.ConnectionPool]:
    """A pool on the HBase the command's flags and environment name, for reading ``table``;
    an embedded store that does not exist yet is refused before a gateway creates it, and one
    that does is served by one gateway process unless the settings say how many."""
    settings = settings_from_args(args)
    require_table_store(settings, table)
    if settings.embedded and settings.gateway_workers is None:
        # One command is one client: a gateway of one process starts and stops the fastest.
        settings = settings.with_overrides(gateway_workers=1)
    with hbase_pool(settings) as pool:
        yield pool


def fail(
    args: argparse.Namespace,
    code: int,
    error: str,
    message: str,
    path: str | None = None,
    details: dict[str, Any] | None = None,
) -> int:
    """Print the error (JSON with ``--json``, ``details`` beside its fields, else one line) on
    stderr; returns ``code``."""
    if getattr(args, "as_json", False):  # a command without --json prints the line
        body = {"error": error, "message": message, "path": path, **(details or {})}
        print(json.dumps(body), file=sys.stderr)
    elif path:
        print(f"query error at {path}: {message}", file=sys.stderr)
    else:
        print(f"error: {message}", file=sys.stderr)
    return code


def _is_arrow_failure(exc: Exception) -> bool:
    """An Arrow error reading the lake; Arrow is loaded only by the commands that read it."""
    arrow = sys.modules.get("pyarrow")
    return arrow is not None and isinstance(exc, arrow.ArrowException)


Command = Callable[..., int]
"""A command's body: its parsed arguments first, an exit code back."""


def reports_failures(table: str) -> Callable[[Command], Command]:
    """How every command that reads ``table`` ends when an input, HBase or the lake fails.

    ``InputError``: exit 2 with its code, message and JSON path. The table missing (from the
    embedded store, or from HBase): exit 1, ``table_not_found``, saying where it was looked for
    and how to point the command elsewhere. HBase unusable: exit 1, ``hbase_unavailable``. A
    lake file that does not decode (Arrow): exit 1, ``lake_unreadable``. Errors of the command's
    own domain are the command's to report, before these.
    """

    def decorate(command: Command) -> Command:
        @functools.wraps(command)
        def run(args: argparse.Namespace, *more: Any) -> int:
            try:
                return command(args, *more)
            except InputError as exc:
                return fail(args, EXIT_INPUT, exc.error, exc.message, exc.path)
            except MissingTable as exc:
                return fail(args, EXIT_FAILURE, "table_not_found", str(exc))
            except HBASE_FAILURES as exc:
                if is_table_not_found(exc):
                    # The settings parsed before HBase was reached; read them again to say where.
                    where = missing_table_message(settings_from_args(args), table)
                    return fail(args, EXIT_FAILURE, "table_not_found", where)
                return fail(args, EXIT_FAILURE, "hbase_unavailable", f"HBase: {exc}")
            except Exception as exc:
                if _is_arrow_failure(exc):
                    return fail(args, EXIT_FAILURE, "lake_unreadable", f"lake: {exc}")
                raise

        return run

    return decorate
