"""``audience_estimation_error``: sketch answers against exact Spark answers on the lake."""

import contextlib
from datetime import date, timedelta

import numpy as np
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    Config,
    MetadataValue,
    asset_check,
)
from dagster_pyspark import LazyPySparkResource
from pydantic import Field
from pyspark.sql import functions as F

from profile_assets.audience_assets import audience_sketches
from profile_assets.partitions import daily_partitions
from profile_store.audiences.accuracy import AccuracyBars, error_histogram_png, histogram_markdown
from profile_store.audiences.accuracy_run import run_accuracy
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.lake_layout import AUDIENCE_SKETCHES, TRIMMED_ATTRIBUTES, day_dir, events_day
from resources.hbase import HBaseResource
from resources.lake import LakeResource

ACCURACY_LEGEND = """\
| key | meaning |
| --- | --- |
| `mean_error_pct` | mean of abs(estimate - exact) / exact over the queries, in percent |
| `queries_under_1pct_error_pct` | percent of the queries whose error is below 1% |
| `queries_under_10pct_error_pct` | percent of the queries whose error is below 10% |
| `bounds_hold_pct` | percent of the queries whose 95% bounds contain the exact answer |
| `exact_answers_pct` | percent answered exactly (every sketch below its capacity) |
| `max_...` / `min_...` | the bar the value before it must meet (check config) |
"""


class EstimationErrorConfig(Config):
    queries: int = Field(default=200, description="Generated query trees to evaluate.")
    seed: int = Field(default=20261101, description="Seed of the query mix.")
    window_days: int = Field(default=30, description="Days up to the partition to query over.")
    max_mean_error: float = 0.02
    min_share_under_1pct: float = 0.60
    min_share_under_10pct: float = 0.97
    min_bounds_coverage: float = 0.93


@asset_check(
    asset=audience_sketches,
    partitions_def=daily_partitions,
    description=(
        "A fixed-seed mix of audience queries (leaves, unions, intersections of very different "
        "sizes, differences, min_count, attribute filters) answered from HBase sketches and "
        "exactly by Spark over the lake; passes on mean error <= 2%, >= 60% of queries under "
        "1%, >= 97% under 10%, and 95% bounds holding the exact answer in >= 93%."
    ),
)
def audience_estimation_error(
    context: AssetCheckExecutionContext,
    config: EstimationErrorConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
    hbase: HBaseResource,
) -> AssetCheckResult:
    day = date.fromisoformat(context.partition_key)
    storage = lake.storage()
    window = [day - timedelta(days=i) for i in reversed(range(config.window_days))]
    built = [d for d in window if storage.exists(f"{day_dir(AUDIENCE_SKETCHES, d)}/pairs.json")]
    days = _consecutive_tail(built, day)
    session = spark.spark_session
    events = session.read.parquet(*[storage.spark_uri(events_day(d)) for d in days])
    decisions = None
    for d in days:
        part = session.read.parquet(storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, d)))
        part = part.withColumn("date", F.lit(d.isoformat()))
        decisions = part if decisions is None else decisions.unionByName(part)

    @contextlib.contextmanager
    def open_table():
        with hbase.connection() as connection:
            yield connection.table(SKETCH_TABLE)

    engine = AudienceEngine(open_table, min_retained_for_estimate=0)
    run = run_accuracy(session, events, decisions, engine, days, config.queries, config.seed)
    bars = AccuracyBars(
        config.max_mean_error,
        config.min_share_under_1pct,
        config.min_share_under_10pct,
        config.min_bounds_coverage,
    )
    failures = run.report.failures(bars)
    report = run.report
    return AssetCheckResult(
        passed=not failures,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(failures) or "all accuracy bars met",
        metadata={
            "queries": report.queries,
            "days_queried": f"{days[0]}..{days[-1]} ({len(days)} days)",
            # Every share is a percent (suffix _pct), each followed by the bar it must meet.
            "mean_error_pct": round(report.mean_error * 100, 3),
            "max_mean_error_pct": config.max_mean_error * 100,
            "queries_under_1pct_error_pct": round(report.share_under_1pct * 100, 2),
            "min_queries_under_1pct_error_pct": config.min_share_under_1pct * 100,
            "queries_under_10pct_error_pct": round(report.share_under_10pct * 100, 2),
            "min_queries_under_10pct_error_pct": config.min_share_under_10pct * 100,
            "bounds_hold_pct": round(report.bounds_coverage * 100, 2),
            "min_bounds_hold_pct": config.min_bounds_coverage * 100,
            "exact_answers_pct": round(report.exact_answers * 100, 2),
            "error_percentiles_pct": MetadataValue.json(
                {
                    "p50": round(report.p50_error * 100, 3),
                    "p90": round(report.p90_error * 100, 3),
                    "p99": round(report.p99_error * 100, 3),
                    "max": round(report.max_error * 100, 3),
                }
            ),
            "legend": MetadataValue.md(ACCURACY_LEGEND),
            "query_latency_ms": MetadataValue.json(
                {
                    "p50": round(float(np.percentile(run.latencies_ms, 50)), 2),
                    "p99": round(float(np.percentile(run.latencies_ms, 99)), 2),
                }
            ),
            "worst_queries": MetadataValue.json(run.worst),
            "error_histogram": MetadataValue.md(
                histogram_markdown(error_histogram_png(run.errors))
            ),
        },
    )


def _consecutive_tail(built: list[date], day: date) -> list[date]:
    """The run of consecutive built days ending at ``day`` (queries need contiguous ranges)."""
    days = []
    current = day
    while current in built:
        days.append(current)
        current -= timedelta(days=1)
    if not days:
        raise ValueError(f"audience_sketches: partition {day} has not been built")
    return list(reversed(days))
