"""Daily run vs full recompute: what one new day costs against rebuilding every day from scratch.

Fixed seed. Generates ``days + 1`` landing days and ingests the first ``days`` into ``raw_events``
(setup), then times, through the code location's assets and ``materialize`` as the runs of a
backfill and of the landing sensor execute them (embedded gateway started per run):

1. full recompute: a fresh HBase store and every lake area except the raw events (landing,
   events, quarantine, segment feed and the answer key are kept) deleted, then every asset but
   ``raw_events`` materialized for each of the ``days`` days in order, one run per day;
2. new day: the whole asset graph for day ``days + 1`` in one run (ingest included), folding
   into the state the full recompute left: identity components and profile compaction run
   incrementally.

Prints a markdown table, the new day's seconds per asset, and the ratio against the bar
(new day <= 0.3x the full recompute). Asset checks are left out unless ``--checks`` (then both
sides run them). The lake is kept under ``--work-dir`` and reused when it is complete::

    .venv/bin/python bench/daily_run.py [--days 30] [--events-per-day 20000] [--seed 7] [--checks]

``--whole-graph`` measures instead what one day of a production run costs: the ``days`` history
days run through every asset and check (setup), then the new day runs through every asset AND
every asset check in one run; it prints seconds per asset and per check and end-to-end events/s
(bar: >= 10,000 events/s on the 2-core machine)::

    .venv/bin/python bench/daily_run.py --whole-graph --days 1 --events-per-day 1000000
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

from profile_store.generator import generate_lake  # noqa: E402
from profile_store.lake.layout import (  # noqa: E402
    EVENTS,
    GROUND_TRUTH,
    LANDING,
    QUARANTINE,
    SEGMENT_FEED,
    SUCCESS_MARKER,
    landing_day,
)

# Early enough that every day is a partition already; set before the code location is imported.
START = date(2026, 9, 1)
KEPT_AREAS = {LANDING, EVENTS, QUARANTINE, SEGMENT_FEED, GROUND_TRUTH}
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def prepare_lake(root: Path, days: int, events_per_day: int, seed: int) -> None:
    """The landing days, generated once per work directory."""
    last = START + timedelta(days=days - 1)
    if (root / landing_day(last) / SUCCESS_MARKER).exists():
        return
    print(f"generating {days} x {events_per_day:,} events (seed {seed}) ...", flush=True)
    shutil.rmtree(root, ignore_errors=True)
    generate_lake(root, days, events_per_day, seed, START)


def clear_derived(root: Path, hbase_dir: Path) -> None:
    """Back to raw events only: a fresh HBase store and no derived lake area."""
    shutil.rmtree(hbase_dir, ignore_errors=True)
    for area in root.iterdir():
        if area.is_dir() and area.name not in KEPT_AREAS:
            shutil.rmtree(area)


class Runner:
    """Materializes the code location's assets for one day at a time, and times each run."""

    def __init__(self, lake: Path, hbase_dir: Path, checks: bool) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PROFILES_START_DATE", START.isoformat())
        from dagster import DagsterInstance

        from profile_assets.definitions import daily_assets, defs
        from resources import resources_from_env

        self.defs = defs
        self.daily_assets = daily_assets
        self.definitions = [*daily_assets, *(defs.asset_checks if checks else [])]
        self.instance = DagsterInstance.ephemeral()
        self.resources = resources_from_env(
            {
                "PROFILES_LAKE_ROOT": str(lake),
                "PROFILES_HBASE_DATA_DIR": str(hbase_dir),
                "PROFILES_START_DATE": START.isoformat(),
            }
        )

    def asset_names(self) -> list[str]:
        return [key.to_user_string() for asset in self.daily_assets for key in asset.keys]

    def run(self, day: date, assets: list[str]) -> tuple[float, dict[str, float]]:
        """Wall seconds of one run, and seconds per step (asset or check)."""
        seconds, steps, _, _ = self.run_with_received_rows(day, assets)
        return seconds, steps

    def run_with_received_rows(
        self, day: date, assets: list[str]
    ) -> tuple[float, dict[str, float], int | None, dict[str, str]]:
        """Wall seconds, seconds per step, the landing rows raw_events read (if it ran), and
        each check's outcome ("passed", or "FAILED" with its severity)."""
        from dagster import materialize

        started = time.perf_counter()
        result = materialize(
            self.definitions,
            selection=assets,
            partition_key=day.isoformat(),
            resources=self.resources,
            instance=self.instance,
            run_config=QUIET,
        )
        seconds = time.perf_counter() - started
        steps = {
            event.step_key: event.event_specific_data.duration_ms / 1000
            for event in result.all_events
            if event.event_type_value == "STEP_SUCCESS"
        }
        received = None
        for event in result.get_asset_materialization_events():
            materialization = event.step_materialization_data.materialization
            if materialization.asset_key.to_user_string() == "raw_events":
                received = materialization.metadata["received_rows"].value
        outcomes = {
            f"{evaluation.asset_key.to_user_string()}_{evaluation.check_name}": "passed"
            if evaluation.passed
            else f"FAILED ({evaluation.severity.value})"
            for evaluation in result.get_asset_check_evaluations()
        }
        return seconds, steps, received, outcomes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30, help="days of the full recompute")
    parser.add_argument("--events-per-day", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--checks", action="store_true", help="also run every asset check")
    parser.add_argument(
        "--whole-graph",
        action="store_true",
        help="time one new day through every asset and check instead of the full recompute",
    )
    parser.add_argument("--work-dir", type=Path, default=Path("data/bench-daily-run"))
    args = parser.parse_args()
    if args.days < 1 or args.events_per_day < 1:
        parser.error("--days and --events-per-day must be at least 1")

    work = args.work_dir / f"{args.days}x{args.events_per_day}-seed{args.seed}"
    lake, hbase_dir = work / "lake", work / "hbase"
    prepare_lake(lake, args.days + 1, args.events_per_day, args.seed)
    days = [START + timedelta(days=i) for i in range(args.days)]
    new_day = START + timedelta(days=args.days)

    if args.whole_graph:
        return whole_graph_day(lake, hbase_dir, days, new_day, args)

    runner = Runner(lake, hbase_dir, args.checks)
    everything = runner.asset_names()
    derived = [name for name in everything if name != "raw_events"]
    clear_derived(lake, hbase_dir)
    print(f"setup: raw_events for {args.days} days ...", flush=True)
    setup = sum(runner.run(day, ["raw_events"])[0] for day in days)

    full = 0.0
    for day in days:
        seconds, _ = runner.run(day, derived)
        full += seconds
        print(f"  full recompute {day}: {seconds:.1f} s", flush=True)
    new_seconds, steps = runner.run(new_day, everything)
    print(f"  new day {new_day}: {new_seconds:.1f} s", flush=True)

    ratio = new_seconds / full
    print()
    print(f"Machine: {machine()}")
    print(
        f"Lake: {args.days + 1} days x {args.events_per_day:,} generated events (seed "
        f"{args.seed}); asset checks {'included' if args.checks else 'left out'}; "
        f"setup ingest of {args.days} days {setup:.1f} s"
    )
    print()
    print("| run | days | seconds | seconds/day |")
    print("| --- | ---: | ---: | ---: |")
    print(
        f"| full recompute (fresh HBase, derived areas deleted) | {args.days} | {full:.1f} | "
        f"{full / args.days:.1f} |"
    )
    print(f"| new day, whole graph, incremental | 1 | {new_seconds:.1f} | {new_seconds:.1f} |")
    print()
    print("| new day: asset | seconds |")
    print("| --- | ---: |")
    for name in everything:
        if name in steps:
            print(f"| {name} | {steps[name]:.1f} |")
    print()
    verdict = "met" if ratio <= 0.3 else "NOT met"
    print(f"New day / full recompute = {ratio:.3f}x (bar <= 0.3x: {verdict})")
    return 0


def whole_graph_day(
    lake: Path, hbase_dir: Path, days: list[date], new_day: date, args: argparse.Namespace
) -> int:
    """The history days through the whole graph (setup), then the new day, timed per step."""
    runner = Runner(lake, hbase_dir, checks=True)
    everything = runner.asset_names()
    clear_derived(lake, hbase_dir)
    shutil.rmtree(lake / EVENTS, ignore_errors=True)
    shutil.rmtree(lake / QUARANTINE, ignore_errors=True)
    for day in days:
        seconds, steps, _, outcomes = runner.run_with_received_rows(day, everything)
        print(f"setup: history day {day}, every asset and check: {seconds:.1f} s", flush=True)
        print("  " + ", ".join(f"{name} {value:.1f}" for name, value in steps.items()), flush=True)
        failed = {name: outcome for name, outcome in outcomes.items() if outcome != "passed"}
        print(f"  checks: {len(outcomes) - len(failed)} of {len(outcomes)} passed {failed or ''}")
    seconds, steps, received, outcomes = runner.run_with_received_rows(new_day, everything)
    assert received is not None, "raw_events did not run"

    print()
    print(f"Machine: {machine()}")
    print(
        f"Lake: {len(days)} history day(s) + 1 new day x {args.events_per_day:,} generated events "
        f"(seed {args.seed}); the new day in one run with every asset and every asset check"
    )
    print()
    print("| new day: step | kind | seconds | outcome |")
    print("| --- | --- | ---: | --- |")
    for name, step_seconds in steps.items():
        kind = "asset" if name in everything else "check"
        outcome = outcomes.get(name, "") if kind == "check" else "materialized"
        print(f"| {name} | {kind} | {step_seconds:.1f} | {outcome} |")
    rate = received / seconds
    print()
    print("| landing events | run seconds | events/s end-to-end |")
    print("| ---: | ---: | ---: |")
    print(f"| {received:,} | {seconds:.1f} | {rate:,.0f} |")
    print()
    verdict = "met" if rate >= 10_000 else "NOT met"
    print(f"End-to-end {rate:,.0f} events/s (bar >= 10,000 events/s: {verdict})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
