"""``profiles kafka``: run the project's Apache Kafka in the foreground (``make kafka``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from profile_store.cli.argument_types import port_number
from profile_store.launchers.kafka_broker import KAFKA_VERSION, run_in_foreground


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register the ``kafka`` sub-command."""
    parser = subparsers.add_parser(
        "kafka",
        help=f"run Apache Kafka {KAFKA_VERSION} (one KRaft node) for the real-time path",
        description=f"Run Apache Kafka {KAFKA_VERSION} on this machine (one KRaft node, broker "
        "and controller; its jars resolved from Maven Central on first use) until Ctrl-C, and "
        "print the variables that point the project at it.",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path("data/kafka"),
        help="the node's logs, metadata and settings (default %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=port_number,
        default=9092,
        help="client port; 0: the port this data directory used before, else a free one "
        "(default %(default)s)",
    )
    parser.set_defaults(func=lambda args: run_in_foreground(args.data_dir, args.port))
    return parser
