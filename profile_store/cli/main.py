"""The ``profiles`` command line: one sub-command per capability.

Each command module contributes its own sub-command through ``add_parser(subparsers)``, so this
file only lists them; the command's options live beside the code they drive. Commands of the
layers above the library (``profiles run``, which runs the Dagster job) are not imported here:
their packages register them in the ``profiles.commands`` entry-point group (pyproject.toml),
and a command's module is loaded only when the command is asked for or listed (``--help``).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Sequence
from importlib.metadata import EntryPoint, PackageNotFoundError, entry_points, version

COMMAND_GROUP = "profiles.commands"
COMMAND_MODULES = (
    "profile_store.cli.generator",
    "profile_store.cli.hbase_gateway",
    "profile_store.cli.audiences",
    "profile_store.cli.profiles",
    "profile_store.cli.serve",
    "profile_store.cli.imports",
    "profile_store.cli.erasure",
    "profile_store.cli.kafka",
    "profile_store.cli.stream",
    "profile_store.cli.send",
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


def registered_commands() -> list[EntryPoint]:
    """The sub-commands other packages register (``profiles.commands``), by name."""
    return sorted(entry_points(group=COMMAND_GROUP), key=lambda entry: entry.name)


def asked_command(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names (its first argument that is not an option), if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``profiles``; a registered command's module is imported only when ``argv``
    asks for it or for no command at all (``--help``, ``--version``, a usage error), so that the
    library's own commands start without the layers above it. ``None``: every command."""
    parser = CommandLineParser(
        prog="profiles", description="Ad-tech profile & audience platform tools."
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {package_version()}")
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=CommandLineParser
    )
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_parser(subparsers)
    asked = None if argv is None else asked_command(argv)
    for entry in registered_commands():
        if argv is None or asked is None or asked == entry.name:
            entry.load().add_parser(subparsers)
        else:  # named, so that a mistyped command is still matched against it
            subparsers.add_parser(entry.name)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    return int(args.func(args) or 0)
