"""One import of your own events: stage a source's lines by day, check them with the ingest
rules, then publish each day into the lake's landing area, with progress for a terminal.

``check_report`` says what ingest would quarantine before anything lands; ``next_steps`` how to
run the imported days, including the partition start they need.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

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
from profile_store.imports.mapping import ImportMapping
from profile_store.lake.storage import LakeStorage
from profile_store.spark.progress import spark_progress

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
