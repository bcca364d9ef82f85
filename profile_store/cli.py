"""The ``profiles`` command line: one sub-command per capability.

Each capability module contributes its own sub-command through ``add_parser(subparsers)``,
so this file only lists them; the command's options live beside the code they drive.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMAND_MODULES = (
    "profile_store.generator.cli",
    "profile_store.hbase_gateway.cli",
    "profile_store.audiences.cli",
    "profile_store.profiles.cli",
    "profile_store.service",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="profiles", description="Ad-tech profile & audience platform tools."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
