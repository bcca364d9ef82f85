"""What the accuracy check's exact side costs against the days of its window.

``audience_estimation_error`` answers a fixed-seed mix of queries twice, from the sketches and
exactly over every built day in its window (30 days by default, the queries spanning 1 to 30 of
them). Read from the events (``EventsExactSide``), the exact side (the mix's catalog and every
leaf's users) reads the whole window each day: a lake that has been running a month makes each
day's check read 30 days of events, which a one-day bench never shows. The check reads each
day's leaf counts instead (``CountedWindow``): a day's events are counted once, by the first
check whose window holds it; on a later day only the new day is counted.

Fixed seed. Generates and ingests one day of ``--events-per-day`` events, decides its trims,
and copies the day's clean events into later days (each event a day later per copy, the same
trims), so that every window holds the same day's work repeated. Then, for each window size of
``--windows``, times in this process's Spark session what the check does over that many days
before it reads a sketch: the catalog, the mix, every leaf's exact users, each tree's exact
answer and operand; from the events, and from the leaf counts with every day but the newest
already counted (a day of a running lake). Prints wall seconds and CPU-seconds of this process
and its JVM, per million events of the window and per day of the window::

    .venv/bin/python bench/accuracy_window.py [--events-per-day 200000] [--windows 1,7,30]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)
from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from run_cost import tree_cpu_seconds  # noqa: E402  (bench/run_cost.py)

from profile_assets.audience_checks import EstimationErrorConfig  # noqa: E402
from profile_store.audiences.attribute_stats import (  # noqa: E402
    TrimRule,
    daily_attribute_stats,
    trim_decisions,
)
from profile_store.audiences.exact import (  # noqa: E402
    EventsExactSide,
    ExactSide,
    counted_leaves,
    exact_users,
    operand_size,
)
from profile_store.audiences.leaf_counts import day_leaf_counts  # noqa: E402
from profile_store.audiences.query import leaves, parse_query  # noqa: E402
from profile_store.audiences.query_sampler import AskedTrees, sample_queries  # noqa: E402
from profile_store.audiences.window_counts import CountedWindow  # noqa: E402
from profile_store.audiences.window_inputs import window_inputs  # noqa: E402
from profile_store.events.ingest import ingest_day  # noqa: E402
from profile_store.events.schema import EVENTS_SCHEMA  # noqa: E402
from profile_store.generator.lake import generate_lake  # noqa: E402
from profile_store.lake.layout import (  # noqa: E402
    AUDIENCE_LEAF_COUNTS,
    TRIMMED_ATTRIBUTES,
    day_dir,
    events_day,
)
from profile_store.lake.storage import LocalLakeStorage  # noqa: E402
from profile_store.spark.session import spark_session_from_env  # noqa: E402

FIRST_DAY = date(2026, 9, 1)


def build_days(spark: SparkSession, root: Path, events_per_day: int, seed: int, days: int) -> int:
    """``days`` days of clean events and trim decisions under ``root``; the events per day."""
    generate_lake(root, 1, events_per_day, seed, start_date=FIRST_DAY)
    storage = LocalLakeStorage(root)
    summary = ingest_day(spark, storage, FIRST_DAY)
    events = spark.read.schema(EVENTS_SCHEMA).parquet(storage.spark_uri(events_day(FIRST_DAY)))
    stats = daily_attribute_stats(events).withColumn("date", F.lit(FIRST_DAY.isoformat()))
    decisions = trim_decisions(stats, TrimRule(), 1).localCheckpoint(eager=True)
    for k in range(days):
        day = FIRST_DAY + timedelta(days=k)
        decisions.write.mode("overwrite").parquet(
            storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, day))
        )
        if k:
            shifted = events.withColumn(
                "event_time", F.col("event_time") + F.expr(f"INTERVAL {k} DAYS")
            )
            shifted.write.mode("overwrite").parquet(storage.spark_uri(events_day(day)))
    return summary.clean_rows


def exact_side(exact: ExactSide, decisions: DataFrame, days: list[date]) -> int:
    """The check's work before any sketch is read; the number of distinct leaves."""
    config = EstimationErrorConfig()
    catalog = exact.catalog(decisions)
    trees = sample_queries(catalog, days, config.queries, config.seed, AskedTrees())
    parsed = [parse_query(tree) for tree in trees]
    all_leaves = [leaf for query in parsed for leaf in leaves(query)]
    leaf_users = exact.leaf_users(all_leaves + counted_leaves(all_leaves))
    for query in parsed:
        exact_users(query, leaf_users)
        operand_size(query, leaf_users)
    return len(leaf_users)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events-per-day", type=int, default=200_000)
    parser.add_argument("--windows", default="1,7,30", help="window sizes in days")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--runs", type=int, default=2, help="runs of each window; best kept")
    args = parser.parse_args()
    windows = [int(size) for size in args.windows.split(",")]

    spark = spark_session_from_env()
    with tempfile.TemporaryDirectory(prefix="accuracy-window-") as work:
        root = Path(work)
        per_day = build_days(spark, root, args.events_per_day, args.seed, max(windows))
        print(f"Machine: {machine()}")
        print(
            f"One generated day of {args.events_per_day:,} events (seed {args.seed}), "
            f"{per_day:,} clean, repeated on {max(windows)} days; "
            f"best of {args.runs} runs per window, the smallest window first"
        )
        print(
            "| window days | exact side from | events of the window | leaves | seconds "
            "| CPU-seconds | CPU-s per M events of the window | CPU-s per day of the window |"
        )
        print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        storage = LocalLakeStorage(root)
        for size in sorted(windows):
            days = [FIRST_DAY + timedelta(days=k) for k in range(size)]
            events, decisions = window_inputs(spark, storage, days)
            for source in ("events", "leaf counts"):
                best = None
                for _ in range(args.runs):
                    for day in days[:-1]:
                        day_leaf_counts(spark, storage, day)  # a running lake's earlier days
                    storage.delete_tree(day_dir(AUDIENCE_LEAF_COUNTS, days[-1]))
                    started, cpu = time.monotonic(), tree_cpu_seconds()
                    exact: ExactSide = (
                        EventsExactSide(spark, events)
                        if source == "events"
                        else CountedWindow(spark, storage, days, events)
                    )
                    count = exact_side(exact, decisions, days)
                    run = (time.monotonic() - started, tree_cpu_seconds() - cpu)
                    best = run if best is None or run[1] < best[1] else best
                seconds, cpu_seconds = best
                read = per_day * size
                print(
                    f"| {size} | {source} | {read:,} | {count} | {seconds:.1f} "
                    f"| {cpu_seconds:.1f} | {cpu_seconds / read * 1e6:.1f} "
                    f"| {cpu_seconds / size:.1f} |",
                    flush=True,
                )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
