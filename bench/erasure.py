"""Erasure of one person over the 30-day benchmark lake: how long until they are gone.

Fixed seed. The lake of ``bench/daily_run.py`` (30 days x 20,000 events, seed 7) with the
erasure tests' planted persons (``tests/erasure/scenario.py``: P, two ids and a login, bridges
A's and B's components) on five of the days; every daily asset built for the 30 days (setup,
not timed, one run a day through the code location's assets). Then timed:

1. ``forget`` of P by one id: the request, the suppression list, P's HBase rows deleted (what
   a bidder sees at once);
2. one run of the ``erasure`` asset: the lake rewritten, the components recomputed, the others
   rewritten in HBase, P's sketch days rebuilt and searched for P's hashes.

Prints the two times and the report's counts::

    .venv/bin/python bench/erasure.py [--days 30] [--events-per-day 20000] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests" / "erasure"))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)
from scenario import P_IDS, plant  # noqa: E402  (tests/erasure/scenario.py)

from profile_store.generator import generate_lake  # noqa: E402

START = date(2026, 9, 1)  # early enough that every day is a partition
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def built_lake(
    work_dir: Path, days: int, events_per_day: int, seed: int, with_p: bool = False
) -> tuple[dict, object]:
    """A generated lake under ``work_dir`` (with ``with_p``, the person P planted on its first
    and last days and every quarter between), every daily asset built into the embedded gateway
    (not timed); returns the resources and the Dagster instance."""
    from dagster import DagsterInstance
    from daily_runs import build_days  # tests/erasure/daily_runs.py

    from resources import resources_from_env

    lake, hbase_dir = work_dir / "lake", work_dir / "hbase"
    shutil.rmtree(work_dir, ignore_errors=True)
    all_days = [START + timedelta(days=i) for i in range(days)]
    quarter = max(1, days // 4)
    planted = sorted({all_days[0], *all_days[::quarter], all_days[-1]}) if with_p else []
    print(
        f"generating {days} x {events_per_day:,} events (seed {seed})"
        + (f"; the person on {len(planted)} days" if planted else "")
        + " ...",
        flush=True,
    )
    generate_lake(lake, days, events_per_day, seed, START)
    for day in planted:
        plant(lake, day, first_day=day == all_days[0])
    resources = resources_from_env(
        {"PROFILES_LAKE_ROOT": str(lake), "PROFILES_HBASE_DATA_DIR": str(hbase_dir)}
    )
    instance = DagsterInstance.ephemeral()
    started = time.perf_counter()
    build_days(all_days, resources, instance, QUIET)
    print(f"built {days} days in {time.perf_counter() - started:.0f} s (not timed)")
    return resources, instance


def lake_arguments(
    description: str, days: int, events_per_day: int, work_dir: str
) -> argparse.ArgumentParser:
    """The options of a benchmark over a ``built_lake``, with its defaults."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--days", type=int, default=days)
    parser.add_argument("--events-per-day", type=int, default=events_per_day)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=Path(work_dir))
    return parser


def use_lake_environment() -> None:
    """Spark's workers in this interpreter; partitions from ``START`` (before the code location
    is imported: it reads them then)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PROFILES_START_DATE"] = START.isoformat()


def main() -> int:
    args = lake_arguments(__doc__.splitlines()[0], 30, 20_000, "/tmp/bench-erasure").parse_args()
    use_lake_environment()
    from dagster import materialize

    from profile_assets.erasure_assets import erasure
    from profile_store.erasure.forget import forget
    from profile_store.erasure.requests import GivenId
    from profile_store.hbase.pool import table_opener
    from profile_store.profiles.table import PROFILE_TABLE

    resources, instance = built_lake(
        args.work_dir, args.days, args.events_per_day, args.seed, with_p=True
    )
    hbase = resources["hbase"]
    storage = resources["lake"].storage()
    started = time.perf_counter()
    request = forget(storage, table_opener(hbase.pool(), PROFILE_TABLE), [GivenId(P_IDS[0])])
    immediate = time.perf_counter() - started
    hbase.close()  # the erasure run starts its own gateway over the same store

    started = time.perf_counter()
    result = materialize([erasure], resources=resources, instance=instance, run_config=QUIET)
    step = time.perf_counter() - started
    assert result.success
    (report,) = next(
        m.metadata["reports"].value
        for m in result.asset_materializations_for_node("erasure")
        if m.asset_key.to_user_string() == "erasure"
    )
    hbase.close()

    print(f"\nmachine: {machine()}")
    print(f"lake: {args.days} days x {args.events_per_day:,} events")
    print("\n| part | seconds |")
    print("| --- | ---: |")
    deleted = request.request.immediate["profile_rows_deleted"]
    print(f"| forget: request, suppression, {deleted} profile rows deleted | {immediate:.2f} |")
    print(f"| erasure run (Dagster materialize, Spark session start included) | {step:.1f} |")
    print(f"| of which the batch's steps (report `batch.seconds`) | {report['batch']['seconds']} |")
    batch = report["batch"]
    print(f"\nrows removed: {report['rows_removed']}")
    print(
        f"partitions rewritten: {len(batch['partitions_rewritten'])}, landing/feed files "
        f"rewritten: {batch['files_rewritten']}, component days recomputed: "
        f"{len(batch['component_days_recomputed'])}, HBase rows rewritten: "
        f"{batch['hbase_rows_rewritten']}"
    )
    print(
        f"sketch days rebuilt: {len(batch['sketch_days_rebuilt'])}, sketch rows searched: "
        f"{batch['sketch_rows_checked']:,}, still retaining a hash: "
        f"{batch['sketch_rows_retaining']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
