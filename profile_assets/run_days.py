"""``profiles run``: one day or a range of days of ``daily_pipeline`` from the command line.

A run started here is what the UI's launchpad makes: a run of the ``daily_pipeline`` job for one
day partition, every asset and check, recorded in the Dagster instance of ``$DAGSTER_HOME``
(created as ``.dagster_home`` in the current directory when unset), so the UI shows it afterwards
with its logs. The days run in order, each in this process (one Spark session for all); the
first failed run stops the range, since every later day folds into its state. A day outside the
partitions (before ``PROFILES_START_DATE``, or not over yet) is refused before anything runs.

    profiles run 2026-11-01                 # one day
    profiles run 2026-11-01 2026-11-07      # a range, inclusive
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import date, timedelta
from pathlib import Path

from profile_store.cli.argument_types import iso_date

DEFAULT_HOME = ".dagster_home"


class PartitionOutOfRange(ValueError):
    """A requested day is not a partition of the code location."""


def days_between(first: date, last: date) -> list[date]:
    if last < first:
        raise PartitionOutOfRange(f"LAST_DAY {last} is before DAY {first}")
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def check_partitions(days: list[date], partition_keys: list[str]) -> None:
    """Every day must be a partition; the message says which are not, and what to change."""
    known = set(partition_keys)
    outside = [d.isoformat() for d in days if d.isoformat() not in known]
    if not outside:
        return
    span = f"{partition_keys[0]} .. {partition_keys[-1]}" if partition_keys else "none yet"
    shown = ", ".join(outside[:5]) + (f" and {len(outside) - 5} more" if len(outside) > 5 else "")
    raise PartitionOutOfRange(
        f"{shown}: not a day partition (partitions: {span}); a day before the first needs "
        "PROFILES_START_DATE set on or before it, a day that is not over yet cannot run"
    )


def dagster_home() -> Path:
    """``$DAGSTER_HOME``, or ``./.dagster_home`` (created) when unset."""
    home = Path(os.environ.get("DAGSTER_HOME") or Path.cwd() / DEFAULT_HOME).resolve()
    home.mkdir(parents=True, exist_ok=True)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def run(first: date, last: date | None) -> int:
    from dagster import DagsterInstance

    from profile_assets.automation import WHOLE_DAY_RUN_TAGS
    from profile_assets.definitions import defs
    from profile_assets.demo_progress import run_partition
    from profile_assets.partitions import daily_partitions

    days = days_between(first, last or first)
    check_partitions(days, daily_partitions.get_partition_keys())
    home = dagster_home()
    print(f"Dagster home: {home} (the UI shows these runs: make ui)", flush=True)
    instance = DagsterInstance.get()
    job = defs.resolve_job_def("daily_pipeline")
    for number, day in enumerate(days, start=1):
        started = time.monotonic()
        print(f"day {number}/{len(days)}  {day}", flush=True)
        outcome = run_partition(job, day.isoformat(), instance, WHOLE_DAY_RUN_TAGS)
        failed = [name for name, passed in outcome["checks"].items() if not passed]
        seconds = time.monotonic() - started
        if not outcome["success"]:
            print(f"{day}: run {outcome['run_id']} FAILED ({seconds:.1f}s); see it in the UI")
            return 1
        verdict = f"checks failed: {', '.join(failed)}" if failed else "every check passed"
        print(f"{day}: run {outcome['run_id']} succeeded, {verdict} ({seconds:.1f}s)", flush=True)
        if failed:
            return 1
    return 0


def _run_command(args: argparse.Namespace) -> int:
    try:
        return run(args.day, args.last_day)
    except PartitionOutOfRange as error:
        print(f"profiles run: {error}", file=sys.stderr)
        return 2


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``run`` sub-command."""
    parser = subparsers.add_parser(
        "run",
        help="run daily_pipeline for a day or a range of days, as the UI would",
        description=__doc__.split("\n\n")[1],
    )
    parser.add_argument("day", type=iso_date, metavar="DAY", help="first day, YYYY-MM-DD")
    parser.add_argument(
        "last_day", type=iso_date, nargs="?", metavar="LAST_DAY", help="last day (inclusive)"
    )
    parser.set_defaults(func=_run_command)
    return parser
