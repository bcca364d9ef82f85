"""The main job on embedded defaults: generate a sample lake, materialize every asset, report.

Runs against the Dagster instance in ``$DAGSTER_HOME`` so that the runs it makes are the ones
``make ui`` shows afterwards.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import date, timedelta
from pathlib import Path

from dagster import DagsterInstance

from profile_assets.definitions import defs
from profile_store.generator.lake import generate_lake
from profile_store.lake_layout import LANDING
from resources.lake import LakeResource

DEFAULT_START = date(2026, 11, 1)


def _print(line: str = "") -> None:
    print(line, flush=True)


def _run_partition(job, day: str, instance: DagsterInstance) -> dict:
    result = job.execute_in_process(partition_key=day, instance=instance, raise_on_error=False)
    materialized = {}
    for event in result.get_asset_materialization_events():
        materialization = event.asset_materialization
        metadata = {k: v.value for k, v in materialization.metadata.items()}
        materialized[materialization.asset_key.to_user_string()] = metadata
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    return {"success": result.success, "assets": materialized, "checks": checks}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--events-per-day", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--start-date", type=date.fromisoformat, default=DEFAULT_START)
    parser.add_argument(
        "--regenerate", action="store_true", help="Write the sample lake again even if present."
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    lake = LakeResource.from_env()
    if lake.is_s3:
        parser.error("the demo writes its sample lake locally; unset PROFILES_LAKE_ROOT")
    lake_root = Path(lake.root).resolve()
    days = [args.start_date + timedelta(days=i) for i in range(args.days)]

    _print("== Ad-tech profile platform: demo on embedded defaults ==")
    _print(f"lake: {lake_root}   Dagster home: {os.environ.get('DAGSTER_HOME', '(temporary)')}")
    landing_present = all((lake_root / LANDING / f"date={d}" / "_SUCCESS").exists() for d in days)
    if landing_present and not args.regenerate:
        _print(f"[1/2] sample lake already generated for {days[0]}..{days[-1]} (--regenerate)")
    else:
        _print(
            f"[1/2] generating {args.days} days x {args.events_per_day:,} events "
            f"(seed {args.seed}) ..."
        )
        t0 = time.monotonic()
        summary = generate_lake(
            lake_root,
            days=args.days,
            events_per_day=args.events_per_day,
            seed=args.seed,
            start_date=args.start_date,
            progress=lambda line: _print(f"      {line}"),
        )
        _print(f"      {summary.total_events:,} events in {time.monotonic() - t0:.1f}s")

    _print(f"[2/2] materializing every asset for {len(days)} day partitions ...")
    instance = DagsterInstance.get() if os.environ.get("DAGSTER_HOME") else None
    instance = instance or DagsterInstance.ephemeral()
    job = defs.resolve_implicit_global_asset_job_def()
    failures = 0
    totals = {"clean": 0, "quarantined": 0, "duplicates": 0}
    for day in days:
        t0 = time.monotonic()
        outcome = _run_partition(job, day.isoformat(), instance)
        raw = outcome["assets"].get("raw_events", {})
        failed_checks = [name for name, passed in outcome["checks"].items() if not passed]
        failures += (not outcome["success"]) + len(failed_checks)
        totals["clean"] += raw.get("dagster/row_count", 0)
        totals["quarantined"] += raw.get("quarantined_rows", 0)
        totals["duplicates"] += raw.get("duplicates_dropped", 0)
        status = "ok" if outcome["success"] and not failed_checks else "FAILED"
        _print(
            f"      {day}  {status:6}  events {raw.get('dagster/row_count', 0):>9,}  "
            f"quarantined {raw.get('quarantined_rows', 0):>6,}  "
            f"duplicates {raw.get('duplicates_dropped', 0):>5,}  "
            f"checks {sum(outcome['checks'].values())}/{len(outcome['checks'])} passed  "
            f"({time.monotonic() - t0:.1f}s)"
        )
        if failed_checks:
            _print(f"        failed checks: {', '.join(failed_checks)}")

    _print()
    _print("== What was produced ==")
    _print(f"clean events      {totals['clean']:>12,}  -> {lake_root / 'events'}")
    _print(f"quarantined rows  {totals['quarantined']:>12,}  -> {lake_root / 'quarantine'}")
    _print(f"duplicates dropped{totals['duplicates']:>12,}")
    _print(f"ground truth                    -> {lake_root / 'ground_truth'}")
    _print()
    _print("Open the Dagster UI on these runs:  make ui   then browse http://127.0.0.1:3000")
    _print(f"Total wall time: {time.monotonic() - started:.0f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
