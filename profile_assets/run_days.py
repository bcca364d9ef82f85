"""``profiles run``: one day or a range of days of ``daily_pipeline`` from the command line.

A run started here is what the UI's launchpad makes: a run of the ``daily_pipeline`` job for one
day partition, every asset and check, recorded in the Dagster instance of ``$DAGSTER_HOME``
(created as ``.dagster_home`` in the current directory when unset), so the UI shows it afterwards
with its logs. The days run in order, each in this process (one Spark session for all). The
first failed day (a failed step or check) stops the range, since every later day folds into its
state, and the days left unrun are named; ``--keep-going`` runs every day and names each failed
one with its failed steps and checks at the end. Either way a failed day is exit 1. A check of
warning severity that did not pass (``identity_bridging_kinds``) is printed as ``WARNED`` with
its reason and named in the day's line, but the day counts as done (exit 0); so is a check that
had nothing to judge (``unjudged``). Only a day whose every check passed on something says
"every check passed". A day outside
the partitions (before ``PROFILES_START_DATE``, or not over yet) is refused before anything runs.

    profiles run 2026-11-01                 # one day
    profiles run 2026-11-01 2026-11-07      # a range, inclusive
    profiles run 2026-11-01 2026-11-07 --keep-going
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import TextIO

from profile_store.cli.argument_types import iso_date

DEFAULT_HOME = ".dagster_home"
LOCAL_INSTANCE = Path(__file__).resolve().parents[1] / "examples" / "dagster.local.yaml"
"""The laptop instance file, where the project is checked out (an editable install)."""


class PartitionOutOfRange(ValueError):
    """A requested day is not a partition of the code location."""


def days_between(first: date, last: date) -> list[date]:
    if last < first:
        raise PartitionOutOfRange(f"LAST_DAY {last} is before DAY {first}")
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def check_partitions(days: list[date], partition_keys: Sequence[str]) -> None:
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


def install_local_instance(home: Path, template: Path = LOCAL_INSTANCE) -> str:
    """Give a home without ``dagster.yaml`` the laptop instance (one run of the code location at
    a time, telemetry off), as ``make ui`` and ``make demo`` do; a home with one keeps it.

    Without it Dagster would print its missing-configuration warning and telemetry banner, and
    runs launched from the UI over this home could write two days at once. Returns what was
    done, for the user.
    """
    target = home / "dagster.yaml"
    if target.exists():
        return f"its instance: {target}"
    if not template.is_file():
        return (
            f"no {target}: Dagster's defaults apply (several runs at once); copy the project's "
            "examples/dagster.local.yaml there for one run at a time"
        )
    shutil.copyfile(template, target)
    return f"installed the laptop instance ({template.name}: one run at a time, telemetry off)"


@dataclass(frozen=True)
class DayRun:
    """What one day's run came to: its run id, failed steps and failed checks."""

    day: date
    run_id: str
    succeeded: bool = True
    """Dagster's verdict on the run: False when a step failed, or the run itself."""
    failed_steps: list[str] = field(default_factory=list)
    failed_checks: list[str] = field(default_factory=list)
    warned_checks: list[str] = field(default_factory=list)
    """Warning-severity checks that did not pass: said, but the day counts as done."""
    unjudged_checks: list[str] = field(default_factory=list)
    """Checks that passed with nothing to measure (e.g. no answer key for your own data)."""

    @property
    def failed(self) -> bool:
        return not self.succeeded or bool(self.failed_steps or self.failed_checks)

    def checks_said(self) -> str:
        """ "every check passed" only when each one did, with something to judge; else what
        warned and what had nothing to judge, by name."""
        if not self.warned_checks and not self.unjudged_checks:
            return "every check passed"
        parts = []
        if self.warned_checks:
            parts.append(
                f"{_counted(self.warned_checks, 'check')} warned: {', '.join(self.warned_checks)}"
            )
        if self.unjudged_checks:
            parts.append(
                f"{_counted(self.unjudged_checks, 'check')} had nothing to judge: "
                f"{', '.join(self.unjudged_checks)}"
            )
        return "; ".join(parts) + ", the others passed"

    def failures(self) -> str:
        """ "step audience_sketches failed; checks failed: raw_events_ids" (empty: none)."""
        parts = []
        if not self.succeeded and not self.failed_steps:
            parts.append("the run failed before any step (see its logs)")
        if self.failed_steps:
            plural = "s" if len(self.failed_steps) > 1 else ""
            parts.append(f"step{plural} failed: {', '.join(self.failed_steps)}")
        if self.failed_checks:
            plural = "s" if len(self.failed_checks) > 1 else ""
            parts.append(f"check{plural} failed: {', '.join(self.failed_checks)}")
        return "; ".join(parts)


def run_days(
    days: list[date], run_day: Callable[[date], DayRun], keep_going: bool, out: TextIO
) -> int:
    """Run ``days`` in order; 1 when any failed. Without ``keep_going`` the first failed day
    stops the range and the days left unrun are named; with it every day runs and the failed
    ones are listed at the end."""
    failed: list[DayRun] = []
    for number, day in enumerate(days, start=1):
        started = time.monotonic()
        print(f"day {number}/{len(days)}  {day}", file=out, flush=True)
        outcome = run_day(day)
        seconds = time.monotonic() - started
        if not outcome.failed:
            print(
                f"{day}: run {outcome.run_id} succeeded, {outcome.checks_said()} ({seconds:.1f}s)",
                file=out,
                flush=True,
            )
            continue
        print(
            f"{day}: run {outcome.run_id} FAILED, {outcome.failures()} ({seconds:.1f}s); "
            "see it in the UI",
            file=out,
            flush=True,
        )
        failed.append(outcome)
        unrun = days[number:]
        if unrun and not keep_going:
            print(
                f"not run: {_span(unrun)} ({len(unrun)} day{'s' if len(unrun) > 1 else ''}), "
                f"since each day folds into the state of the day before; once {day} is fixed "
                f"run `profiles run {day} {days[-1]}`, or pass --keep-going to run them anyway",
                file=out,
                flush=True,
            )
            return 1
    if failed:
        print(f"{len(failed)} of {len(days)} days failed:", file=out)
        for outcome in failed:
            print(f"  {outcome.day}: run {outcome.run_id}, {outcome.failures()}", file=out)
        return 1
    return 0


def _counted(names: list[str], noun: str) -> str:
    return f"{len(names)} {noun}{'s' if len(names) != 1 else ''}"


def _span(days: list[date]) -> str:
    return str(days[0]) if len(days) == 1 else f"{days[0]} .. {days[-1]}"


def run(first: date, last: date | None, keep_going: bool = False) -> int:
    from dagster import DagsterInstance

    from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS
    from profile_assets.definitions import defs
    from profile_assets.demo_progress import run_partition
    from profile_assets.partitions import daily_partitions

    days = days_between(first, last or first)
    check_partitions(days, daily_partitions.get_partition_keys())
    home = dagster_home()
    installed = install_local_instance(home)
    print(f"Dagster home: {home}, {installed} (the UI shows these runs: make ui)", flush=True)
    instance = DagsterInstance.get()
    job = defs.resolve_job_def("daily_pipeline")

    def run_day(day: date) -> DayRun:
        outcome = run_partition(job, day.isoformat(), instance, WHOLE_DAY_RUN_TAGS)
        return DayRun(
            day,
            outcome["run_id"],
            succeeded=outcome["success"],
            failed_steps=outcome["failed_steps"],
            failed_checks=[name for name, passed in outcome["checks"].items() if not passed],
            warned_checks=sorted(outcome["warnings"]),
            unjudged_checks=sorted(outcome["unjudged"]),
        )

    return run_days(days, run_day, keep_going, sys.stdout)


def _run_command(args: argparse.Namespace) -> int:
    try:
        return run(args.day, args.last_day, args.keep_going)
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
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="run every day even after one fails; list the failed days at the end (exit 1)",
    )
    parser.set_defaults(func=_run_command)
    return parser
