"""``profiles import``: your own events (CSV, Parquet, JSON Lines) into the lake's landing area.

    profiles import SOURCE --mapping MAPPING [--dry-run] [--lake ROOT]

SOURCE is a file, a directory or a glob, local or ``s3://``; the mapping file (YAML or JSON,
``profile_store/imports/mapping.py``) says which column becomes which event field. The import
checks every line with the ingest rules and reports what would be quarantined before anything
lands; each day it writes replaces that day's landing files, ``_SUCCESS`` last. The lake is
``PROFILES_LAKE_ROOT`` (``data/lake``) unless ``--lake`` is given. Alternate id kinds of the
mapping that the identity configuration (``PROFILES_IDENTITY_CONFIG``) does not bridge are named
in a warning: they are imported, and link nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
from datetime import UTC, datetime

from profile_store.cli.conventions import EXIT_INPUT
from profile_store.identity.settings import (
    IdentityConfigError,
    identity_rules_from_env,
    non_bridging_kinds,
    non_bridging_message,
)
from profile_store.imports.mapping import MappingError, load_mapping
from profile_store.imports.source_import import import_source, next_steps
from profile_store.lake.settings import LakeSettings, start_date_from_env
from profile_store.spark.session import spark_session_from_env


def _import_command(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if args.lake:
        env["PROFILES_LAKE_ROOT"] = args.lake
    try:
        start = start_date_from_env(env)
    except ValueError as error:  # checked first: the imported days are to run from it
        print(f"profiles import: {error}", file=sys.stderr)
        return EXIT_INPUT
    try:
        mapping = load_mapping(args.mapping)
        rules = identity_rules_from_env(env)
        lake = LakeSettings.from_env(env)
        print(f"lake: {lake.root}", flush=True)
        spark = spark_session_from_env(env, also_reads=[args.source])
        result = import_source(spark, lake.storage(), args.source, mapping, dry_run=args.dry_run)
        if not result.check.days and result.check.unplaced:
            raise MappingError(
                f"event_time: no line of {args.source} has a time that parses as "
                f"{mapping.event_time.format!r}: nothing imported"
            )
    except (MappingError, IdentityConfigError) as error:
        print(f"profiles import: {error}", file=sys.stderr)
        return EXIT_INPUT
    except Exception as error:
        if "PATH_NOT_FOUND" in str(error) or "Path does not exist" in str(error):
            print(f"profiles import: {args.source}: no such file or directory", file=sys.stderr)
            return EXIT_INPUT
        raise
    days = [d.day for d in result.published]
    for line in next_steps(days, start, datetime.now(UTC).date()):
        print(line)
    unused = non_bridging_kinds(mapping.alt_ids, rules)
    if unused:  # last, where it is read: the import itself went well
        print(f"profiles import: warning: {non_bridging_message(unused, rules)}", file=sys.stderr)
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``import`` sub-command."""
    parser = subparsers.add_parser(
        "import",
        help="import CSV, Parquet or JSON Lines events into the landing area",
        description=__doc__.split("\n\n")[2],
    )
    parser.add_argument("source", metavar="SOURCE", help="a file, a directory or a glob")
    parser.add_argument(
        "--mapping", required=True, metavar="FILE", help="YAML or JSON: column -> event field"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check and report, write nothing to landing/"
    )
    parser.add_argument("--lake", metavar="ROOT", help="directory or s3://bucket/prefix")
    parser.set_defaults(func=_import_command)
    return parser
