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
import json
import re
import sys
from datetime import date
from typing import Any

from thriftpy2.thrift import TException

from profile_store.hbase_client import PROTOCOLS, TRANSPORTS, HBaseSettings
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


def positive_int(text: str) -> int:
    """An argument type: a whole number >= 1 (the error says so in words)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def share(text: str) -> float:
    """An argument type: a fraction within [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within [0, 1], got {text}")
    return value


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def iso_date(text: str) -> date:
    """An argument type: a calendar date written YYYY-MM-DD (and no other ISO form)."""
    try:
        if not _ISO_DATE.match(text):
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r}") from None


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


def fail(
    args: argparse.Namespace, code: int, error: str, message: str, path: str | None = None
) -> int:
    """Print the error (JSON with ``--json``, else one line) on stderr; returns ``code``."""
    if args.as_json:
        print(json.dumps({"error": error, "message": message, "path": path}), file=sys.stderr)
    elif path:
        print(f"query error at {path}: {message}", file=sys.stderr)
    else:
        print(f"error: {message}", file=sys.stderr)
    return code
