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
    TableColumn,
    TableRecord,
    TableSchema,
    asset_check,
)
from dagster_pyspark import LazyPySparkResource
from pydantic import Field
from pyspark.sql import functions as F

from profile_assets.audience_assets import audience_sketches
from profile_assets.check_results import logged, nothing_to_judge
from profile_assets.partitions import daily_partitions
from profile_store.audiences.accuracy import (
    AccuracyBars,
    AccuracyReport,
    ErrorSummary,
    error_histogram_png,
    histogram_markdown,
)
from profile_store.audiences.accuracy_run import run_accuracy
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.lake.layout import AUDIENCE_SKETCHES, TRIMMED_ATTRIBUTES, day_dir, events_day
from resources.hbase import HBaseResource
from resources.lake import LakeResource

ACCURACY_LEGEND = """\
| key | meaning |
| --- | --- |
| `accuracy_bars` | every judged figure beside its limit and whether it met it |
| `estimation_mode_answers` | queries answered by an estimate (a sketch past its capacity) |
| `estimation_mode_sought` | of them, trees added to the mix because their pairs estimate |
| `estimation_mode_mean_error_pct` | their mean of abs(estimate - exact) / operand, in percent |
| `estimation_mode_mean_answer_error_pct` | the same relative to the exact answer (reported) |
| `estimation_mode_under_1pct_error_pct` | percent of them whose error is below 1% |
| `estimation_mode_under_10pct_error_pct` | percent of them whose error is below 10% |
| `estimation_mode_bounds_hold_pct` | percent of them whose 95% bounds contain the exact answer |
| `exact_mode_answers`, `exact_mode_max_error_pct` | exact-mode answers must equal the exact one |
| `all_...` | the same figures over every query, for reference |
| `max_...` / `min_...` | the bar the value before it must meet (check config) |

The operand of an answer is the largest set its sketches read: a theta sketch's error is
proportional to it (for an intersection or a difference, the larger side), not to the answer.
"""


class EstimationErrorConfig(Config):
    queries: int = Field(default=200, description="Generated query trees to evaluate.")
    seed: int = Field(default=20261101, description="Seed of the query mix.")
    window_days: int = Field(default=30, description="Days up to the partition to query over.")
    max_mean_error: float = Field(
        default=AccuracyBars.max_mean_error, description="Estimation-mode answers' mean error."
    )
    min_share_under_1pct: float = AccuracyBars.min_share_under_1pct
    min_share_under_10pct: float = AccuracyBars.min_share_under_10pct
    min_bounds_coverage: float = AccuracyBars.min_bounds_coverage
    max_exact_mode_error: float = Field(
        default=AccuracyBars.max_exact_mode_error, description="Exact-mode answers must be exact."
    )
    min_estimation_answers: int = Field(
        default=AccuracyBars.min_estimation_answers,
        description="With fewer estimation-mode answers, a missed bar is a warning, not an error.",
    )
    estimation_answers_sought: int = Field(
        default=50,
        description=(
            "When the mix has fewer estimation-mode answers, trees around the pairs whose "
            "sketches estimate are added until there are this many (if the days estimate)."
        ),
    )


@asset_check(
    asset=audience_sketches,
    partitions_def=daily_partitions,
    description=(
        "A fixed-seed mix of audience queries (leaves, unions, intersections of very different "
        "sizes, small intersections and differences, min_count, attribute filters) answered from "
        "HBase sketches and exactly by Spark over the lake; when few answers estimate, trees "
        "around the pairs whose sketches estimate are added. Exact-mode answers must be exact; "
        "estimation-mode answers pass on mean error <= 3%, >= 35% under 1%, >= 90% under 10% "
        "(errors relative to the larger operand, what a sketch promises), and 95% bounds "
        "holding the exact answer in >= 93%; a miss with fewer than 20 of them is a warning."
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
    events = session.read.schema(EVENTS_SCHEMA).parquet(
        *[storage.spark_uri(events_day(d)) for d in days]
    )
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
    run = run_accuracy(
        session,
        events,
        decisions,
        engine,
        days,
        config.queries,
        config.seed,
        config.estimation_answers_sought,
    )
    if run is None:
        reason = f"no events on {days[0]}..{days[-1]}: no audience to ask about"
        return logged(context, nothing_to_judge(reason, queries=0))
    bars = AccuracyBars(
        config.max_mean_error,
        config.min_share_under_1pct,
        config.min_share_under_10pct,
        config.min_bounds_coverage,
        config.max_exact_mode_error,
        config.min_estimation_answers,
    )
    report = run.report
    failures = report.failures(bars)
    exact_failed = any(f.startswith("exact-mode") for f in failures)
    # Too few estimation-mode answers to be sure: a miss is said (a warning), not hidden.
    severity = (
        AssetCheckSeverity.ERROR if exact_failed or report.judged(bars) else AssetCheckSeverity.WARN
    )
    estimated, exact = report.estimation_mode, report.exact_mode
    description = report.summary(bars)
    if failures:
        description = "; ".join(failures) + f" -- {description}"
    result = AssetCheckResult(
        passed=not failures,
        severity=severity,
        description=description,
        metadata={
            "queries": report.overall.queries,
            "days_queried": f"{days[0]}..{days[-1]} ({len(days)} days)",
            "accuracy_bars": _bars_table(report, bars),
            # Every share is a percent (suffix _pct), each followed by the bar it must meet.
            **_mode_metadata(estimated, config),
            "estimation_mode_sought": run.sought,
            "exact_mode_answers": exact.queries if exact else 0,
            "exact_mode_max_error_pct": round(exact.max_answer_error * 100, 3) if exact else 0.0,
            "max_exact_mode_error_pct": config.max_exact_mode_error * 100,
            "all_mean_error_pct": round(report.overall.mean_error * 100, 3),
            "all_mean_answer_error_pct": round(report.overall.mean_answer_error * 100, 3),
            "all_bounds_hold_pct": round(report.overall.bounds_coverage * 100, 2),
            "error_percentiles_pct": MetadataValue.json(
                {
                    "p50": round(report.overall.p50_error * 100, 3),
                    "p90": round(report.overall.p90_error * 100, 3),
                    "p99": round(report.overall.p99_error * 100, 3),
                    "max": round(report.overall.max_error * 100, 3),
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
    return logged(context, result)


BARS_SCHEMA = TableSchema(
    columns=[
        TableColumn("answers", "string", description="exact mode or estimation mode"),
        TableColumn("count", "int", description="answers in that mode"),
        TableColumn("figure", "string"),
        TableColumn("value_pct", "float", description="measured, in percent"),
        TableColumn("limit_pct", "float", description="the bar, in percent (check config)"),
        TableColumn("met", "bool"),
    ]
)


def _bars_table(report: AccuracyReport, bars: AccuracyBars) -> MetadataValue:
    """The day's judged figures with their limits: one table the check's page shows as is."""
    rows = []
    exact = report.exact_mode_figure(bars)
    if exact is not None:
        rows.append(("exact mode", report.exact_mode.queries, exact))
    rows += [
        ("estimation mode", report.estimation_answers, f) for f in report.estimation_figures(bars)
    ]
    records = [
        TableRecord(
            {
                "answers": mode,
                "count": count,
                "figure": figure.name,
                "value_pct": round(figure.value * 100, 3),
                "limit_pct": round(figure.limit * 100, 3),
                "met": figure.met,
            }
        )
        for mode, count, figure in rows
    ]
    return MetadataValue.table(records, BARS_SCHEMA)


def _mode_metadata(estimated: ErrorSummary | None, config: EstimationErrorConfig) -> dict:
    """The estimation-mode figures, each followed by its bar."""
    if estimated is None:
        return {"estimation_mode_answers": 0}
    return {
        "estimation_mode_answers": estimated.queries,
        "estimation_mode_mean_error_pct": round(estimated.mean_error * 100, 3),
        "max_mean_error_pct": config.max_mean_error * 100,
        "estimation_mode_mean_answer_error_pct": round(estimated.mean_answer_error * 100, 3),
        "estimation_mode_under_1pct_error_pct": round(estimated.share_under_1pct * 100, 2),
        "min_under_1pct_error_pct": config.min_share_under_1pct * 100,
        "estimation_mode_under_10pct_error_pct": round(estimated.share_under_10pct * 100, 2),
        "min_under_10pct_error_pct": config.min_share_under_10pct * 100,
        "estimation_mode_bounds_hold_pct": round(estimated.bounds_coverage * 100, 2),
        "min_bounds_hold_pct": config.min_bounds_coverage * 100,
    }


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
