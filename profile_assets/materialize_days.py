"""Every asset and check of the code location for the given days, in order, in this process.

One Spark session for all the days, configured from the environment (``SPARK_MASTER``,
``PROFILES_LAKE_ROOT``, ...) exactly as a Dagster run of ``daily_pipeline`` configures it, and a
throw-away Dagster instance (the runs do not appear in the UI). The real-Spark tests and
``bench/scaling.py`` run it as a subprocess, so that each run has a Spark session of its own;
a failed run, or a check that did not pass (unless ``--checks-may-fail``), stops it with exit
1; ``--timings`` writes each step's seconds per day as JSON::

    python -m profile_assets.materialize_days [--timings FILE] 2026-11-01 2026-11-02
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dagster import DagsterInstance, materialize

from profile_assets.definitions import daily_assets, defs
from resources import resources_from_env


def materialize_day(day: str, resources: dict, instance: DagsterInstance):
    """Every daily asset and check for ``day``, in this process; failures are in the result."""
    return materialize(
        [*daily_assets, *(defs.asset_checks or ())],
        partition_key=day,
        resources=resources,
        instance=instance,
        raise_on_error=False,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("days", nargs="+")
    parser.add_argument("--timings", type=Path, help="write each step's seconds here (JSON)")
    parser.add_argument(
        "--checks-may-fail",
        action="store_true",
        help="report checks that did not pass and go on (benchmarks time the steps)",
    )
    args = parser.parse_args(argv)
    resources = resources_from_env()
    instance = DagsterInstance.ephemeral()
    timings: dict[str, dict[str, float]] = {}
    try:
        for day in args.days:
            result = materialize_day(day, resources, instance)
            if not result.success:
                print(f"daily pipeline failed for {day}", file=sys.stderr)
                return 1
            failed = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
            if failed:
                print(f"{day}: checks did not pass: {', '.join(failed)}", file=sys.stderr)
                if not args.checks_may_fail:
                    return 1
            timings[day] = {
                stats.step_key: stats.end_time - stats.start_time
                for stats in instance.get_run_step_stats(result.run_id)
                if stats.end_time is not None and stats.start_time is not None
            }
    finally:
        resources["hbase"].close()
    if args.timings is not None:
        args.timings.write_text(json.dumps(timings, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
