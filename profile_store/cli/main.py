"""The ``profiles`` command line: one sub-command per capability.

Each command module contributes its own sub-command through ``add_parser(subparsers)``, so this
file only lists them; the command's options live beside the code they drive. Commands of the
layers above the library (``profiles run``, which runs the Dagster job) are not imported here:
their packages register them in the ``profiles.commands`` entry-point group (pyproject.toml).
Every command's module is loaded only when the command is asked for or listed (``--help``): a
read command answers in a fraction of a second, and the modules of the others (the service's
web stack, Spark, Arrow) would cost it seconds of imports.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from profile_store.settings.definitions import SettingError, check_environment

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

COMMAND_GROUP = "profiles.commands"
COMMAND_MODULES = {
    "generate": "profile_store.cli.generator",
    "hbase-gateway": "profile_store.cli.hbase_gateway",
    "audience": "profile_store.cli.audiences",
    "profile": "profile_store.cli.profiles",
    "serve": "profile_store.cli.serve",
    "import": "profile_store.cli.imports",
    "forget": "profile_store.cli.erasure",
    "kafka": "profile_store.cli.kafka",
    "stream": "profile_store.cli.stream",
    "segment-rules": "profile_store.cli.segment_rules",
    "send": "profile_store.cli.send",
}
"""Each sub-command of the library and the module that registers it."""


class CommandLineParser(argparse.ArgumentParser):
    """argparse, with "did you mean" for a mistyped sub-command (Python 3.14 has it built in)."""

    def _check_value(self, action: argparse.Action, value: object) -> None:
        choices = action.choices
        if (
            isinstance(action, argparse._SubParsersAction)
            and choices is not None
            and value not in choices
        ):
            close = difflib.get_close_matches(str(value), list(choices), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            known = ", ".join(sorted(choices))
            raise argparse.ArgumentError(
                action, f"unknown command '{value}' (commands: {known}){hint}"
            )
        super()._check_value(action, value)


def package_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("adtech-profiles")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown"


class PackageVersionAction(argparse.Action):
    """``--version``, reading the installed metadata only when asked (a read command does not
    pay for loading it)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"{parser.prog} {package_version()}")
        parser.exit()


def registered_commands() -> list[EntryPoint]:
    """The sub-commands other packages register (``profiles.commands``), by name."""
    from importlib.metadata import entry_points

    return sorted(entry_points(group=COMMAND_GROUP), key=lambda entry: entry.name)


def asked_command(argv: Sequence[str]) -> str | None:
    """The sub-command ``argv`` names (its first argument that is not an option), if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of ``profiles``; a command's module is imported only when ``argv`` asks for it
    or for no known command (``--help``, ``--version``, a usage error), so that a command starts
    without the others' imports, and the library's without the layers above it. ``None``: every
    command."""
    parser = CommandLineParser(
        prog="profiles", description="Ad-tech profile & audience platform tools."
    )
    parser.add_argument("--version", action=PackageVersionAction)
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=CommandLineParser
    )
    asked = None if argv is None else asked_command(argv)
    # The registered commands' names come from the installed metadata: not read for the
    # library's own commands.
    entries = [] if asked in COMMAND_MODULES else registered_commands()
    every = asked not in set(COMMAND_MODULES) | {entry.name for entry in entries}
    for name, module_name in COMMAND_MODULES.items():
        if every or asked == name:
            importlib.import_module(module_name).add_parser(subparsers)
        else:  # named, so that a mistyped command is still matched against it
            subparsers.add_parser(name)
    for entry in entries:
        if every or asked == entry.name:
            entry.load().add_parser(subparsers)
        else:
            subparsers.add_parser(entry.name)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:  # the Dagster layer's commands check the settings when their module is imported
        args = build_parser(argv).parse_args(argv)
        check_environment()  # before the command does any work
    except SettingError as error:
        if "--json" in argv:
            print(json.dumps({"error": "invalid_setting", "message": str(error)}), file=sys.stderr)
        else:
            print(f"profiles {asked_command(argv)}: {error}", file=sys.stderr)
        return 2
    return int(args.func(args) or 0)
