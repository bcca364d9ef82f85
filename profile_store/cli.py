"""The ``profiles`` command line: one sub-command per capability.

Each capability module contributes its own sub-command through ``add_parser(subparsers)``,
so this file only lists them; the command's options live beside the code they drive.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from importlib.metadata import PackageNotFoundError, version

COMMAND_MODULES = (
    "profile_store.generator.cli",
    "profile_store.hbase_gateway.cli",
    "profile_store.audiences.cli",
    "profile_store.profiles.cli",
    "profile_store.service",
    "profile_assets.run_days",
    "profile_store.imports.cli",
    "profile_store.erasure.cli",
    "profile_store.launchers.cli",
    "profile_store.realtime.cli",
)


class CommandLineParser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a mistyped sub-command (Python 3.14 has it built in)."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        choices = action.choices
        if isinstance(action, argparse._SubParsersAction) and value not in choices:
            close = difflib.get_close_matches(str(value), list(choices), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(sorted(choices))
            raise argparse.ArgumentError(
                action, f"unknown command '{value}' (commands: {known}){hint}"
            )
        super()._check_value(action, value)


def package_version() -> str:
    try:
        return version("adtech-profiles")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    parser = CommandLineParser(
        prog="profiles", description="Ad-tech profile & audience platform tools."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=CommandLineParser
    )
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
