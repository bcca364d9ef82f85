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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--events-per-day", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/bench-erasure"))
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ["PROFILES_START_DATE"] = START.isoformat()
    from dagster import DagsterInstance, materialize

    from profile_assets.definitions import daily_assets
    from profile_assets.erasure_assets import erasure
    from profile_store.erasure.forget import forget
    from profile_store.erasure.requests import GivenId
    from profile_store.hbase.pool import table_opener
    from profile_store.profiles.table import PROFILE_TABLE
    from resources import resources_from_env

    lake, hbase_dir = args.work_dir / "lake", args.work_dir / "hbase"
    shutil.rmtree(args.work_dir, ignore_errors=True)
    days = [START + timedelta(days=i) for i in range(args.days)]
    planted = sorted({days[0], *days[:: max(1, args.days // 4)], days[-1]})
    print(
        f"generating {args.days} x {args.events_per_day:,} events (seed {args.seed}); the "
        f"person on {len(planted)} days ...",
        flush=True,
    )
    generate_lake(lake, args.days, args.events_per_day, args.seed, START)
    for day in planted:
        plant(lake, day, first_day=day == days[0])
    resources = resources_from_env(
        {"PROFILES_LAKE_ROOT": str(lake), "PROFILES_HBASE_DATA_DIR": str(hbase_dir)}
    )
    instance = DagsterInstance.ephemeral()
    started = time.perf_counter()
    for day in days:
        result = materialize(
            list(daily_assets),
            partition_key=day.isoformat(),
            resources=resources,
            instance=instance,
            run_config=QUIET,
        )
        assert result.success, day
    print(f"built {args.days} days in {time.perf_counter() - started:.0f} s (not timed)")

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
    print(f"lake: {args.days} days x {args.events_per_day:,} events, person on {len(planted)} days")
    print("\n| part | seconds |")
    print("| --- | ---: |")
    deleted = request.request.immediate["profile_rows_deleted"]
    print(f"| forget: request, suppression, {deleted} profile rows deleted | {immediate:.2f} |")
    print(f"| erasure run (Dagster materialize, Spark session start included) | {step:.1f} |")
    print(f"| of which the request's own work (report `seconds`) | {report['seconds']} |")
    print(f"\nrows removed: {report['rows_removed']}")
    print(
        f"partitions rewritten: {len(report['partitions_rewritten'])}, landing/feed files "
        f"rewritten: {report['files_rewritten']}, component days recomputed: "
        f"{len(report['component_days_recomputed'])}, HBase rows rewritten: "
        f"{report['hbase_rows_rewritten']}"
    )
    print(
        f"sketch days rebuilt: {len(report['sketch_days_rebuilt'])}, sketch rows searched: "
        f"{report['sketch_rows_checked']:,}, still retaining a hash: "
        f"{report['sketch_rows_retaining']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
