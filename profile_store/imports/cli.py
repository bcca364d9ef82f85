"""``profiles import``: your own events (CSV, Parquet, JSON Lines) into the lake's landing area.

    profiles import SOURCE --mapping MAPPING [--dry-run] [--lake ROOT]

SOURCE is a file, a directory or a glob, local or ``s3://``; the mapping file (YAML or JSON,
``profile_store/imports/mapping.py``) says which column becomes which event field. The import
checks every line with the ingest rules and reports what would be quarantined before anything
lands; each day it writes replaces that day's landing files, ``_SUCCESS`` last. The lake is
``PROFILES_LAKE_ROOT`` (``data/lake``) unless ``--lake`` is given.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime

from profile_store.cli_conventions import EXIT_INPUT
from profile_store.events.validation import ValidationRules
from profile_store.imports.landing_import import (
    ImportCheck,
    PublishedDay,
    check_staged,
    discard_staging,
    new_import_id,
    publish,
    stage,
)
from profile_store.imports.landing_lines import check_time_format, read_source
from profile_store.imports.mapping import ImportMapping, MappingError, load_mapping
from profile_store.lake.settings import LakeSettings, start_date_from_env
from profile_store.lake.storage import LakeStorage
from profile_store.spark.progress import spark_progress
from profile_store.spark.session import spark_session_from_env

Emit = Callable[[str], None]


@dataclass
class ImportResult:
    check: ImportCheck
    published: list[PublishedDay]


def import_source(
    spark,
    storage: LakeStorage,
    source_path: str,
    mapping: ImportMapping,
    *,
    dry_run: bool = False,
    rules: ValidationRules | None = None,
    emit: Emit = lambda line: print(line, flush=True),
) -> ImportResult:
    """Stage, check and (unless ``dry_run``) publish one source; progress through ``emit``."""
    rules = rules or ValidationRules()
    check_time_format(spark, mapping.event_time)
    source = read_source(spark, source_path, mapping.source)
    mapping.check_columns(source.columns)
    import_id = new_import_id()
    started = time.monotonic()
    emit(f"[1/3] reading {source_path} and staging its lines by day (import {import_id})")
    with spark_progress(spark, "staging", emit=emit):
        staged = stage(source, mapping, storage, import_id)
    try:
        emit(f"[2/3] checking the staged lines with the ingest rules ({elapsed(started)})")
        with spark_progress(spark, "checking", emit=emit):
            check = check_staged(
                spark, storage, staged, rules, ids_may_repeat=mapping.event_id is not None
            )
        for line in check_report(check):
            emit(line)
        if dry_run:
            emit("dry run: nothing written to landing/")
            return ImportResult(check=check, published=[])
        emit(f"[3/3] writing {len(check.days)} days into landing/ ({elapsed(started)})")

        def on_day(number: int, of: int, day: PublishedDay) -> None:
            if number % math.ceil(of / 20) and number != of:
                return  # about 20 lines, however many days
            replaced = f", replaced {day.replaced_files} files" if day.replaced_files else ""
            files = "1 file" if day.files == 1 else f"{day.files} files"
            emit(f"  day {number}/{of}  {day.day}: {files}{replaced}")

        published = publish(storage, staged, on_day)
    finally:
        discard_staging(storage, staged)
    emit(f"done in {elapsed(started)}")
    return ImportResult(check=check, published=published)


def elapsed(started: float) -> str:
    return f"{time.monotonic() - started:.1f} s"


def check_report(check: ImportCheck, max_share: float = 0.02) -> list[str]:
    """What would be accepted and quarantined, per reason with an example, and per day when a
    day's share would fail the raw_events quarantine-share check (2 % by default)."""
    if not check.days:
        lines = ["no lines with a usable event time: nothing to write"]
    else:
        first, last = check.days[0].day, check.days[-1].day
        quarantined = sum(check.quarantined.values())
        lines = [
            f"{check.lines:,} lines in {len(check.days)} days ({first} .. {last}); "
            f"{check.lines - quarantined:,} would be accepted, {quarantined:,} quarantined"
        ]
    for reason, count in check.quarantined.items():
        lines.append(f"  {reason}: {count:,} (e.g. {check.examples.get(reason)})")
    failing = [d for d in check.days if d.quarantine_share > max_share]
    for day in failing:
        lines.append(
            f"  {day.day}: {day.quarantine_share:.1%} of its lines quarantined: its "
            f"quarantine-share check (limit {max_share:.0%}) will fail"
        )
    if check.repeated_event_ids:
        lines.append(
            f"  {check.repeated_event_ids:,} event_ids repeat within a day: identical copies "
            "are dropped at ingest, others quarantined as conflicting_duplicate"
        )
    if check.unplaced:
        lines.append(
            f"  {check.unplaced:,} {'line has' if check.unplaced == 1 else 'lines have'} an "
            f"event time that does not parse (e.g. {check.unplaced_example!r}): no day to put "
            "them in, not written"
        )
    return lines


def next_steps(days: list[date], first_partition: date, today: date) -> list[str]:
    """How to run the imported days, including the partition start they need."""
    if not days:
        return []
    first, last = min(days), max(days)
    span = f"{first}" if first == last else f"{first} {last}"
    lines = []
    if first < first_partition:
        lines += [
            f"These days start before the first day partition ({first_partition}). Dagster's "
            "partitions are fixed when it loads the code, from PROFILES_START_DATE; set it "
            "for every command (or in .env, which dagster dev reads):",
            f"    export PROFILES_START_DATE={first}",
        ]
    if last >= today:
        lines.append(f"Days from {today} on are not over yet: they can run once they are.")
    lines.append(f"Then run them: profiles run {span}   (or backfill them in the UI: make ui)")
    return lines


def _import_command(args: argparse.Namespace) -> int:
    env = dict(os.environ)
    if args.lake:
        env["PROFILES_LAKE_ROOT"] = args.lake
    try:
        mapping = load_mapping(args.mapping)
        start = start_date_from_env(env)
        lake = LakeSettings.from_env(env)
        print(f"lake: {lake.root}", flush=True)
        spark = spark_session_from_env(env, also_reads=[args.source])
        result = import_source(spark, lake.storage(), args.source, mapping, dry_run=args.dry_run)
        if not result.check.days and result.check.unplaced:
            raise MappingError(
                f"event_time: no line of {args.source} has a time that parses as "
                f"{mapping.event_time.format!r}: nothing imported"
            )
    except MappingError as error:
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
