"""``audience_estimation_error``: sketch answers against exact Spark answers on the lake."""

import contextlib
from collections.abc import Mapping
from datetime import date, timedelta

import numpy as np
from dagster import (
    AssetCheckEvaluation,
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

from profile_assets.audience_assets import audience_sketches
from profile_assets.check_results import logged, nothing_to_judge
from profile_assets.partitions import daily_partitions
from profile_store.audiences.accuracy import (
    JUDGED_TO_ANSWER,
    AccuracyBars,
    AccuracyReport,
    ErrorSummary,
    ModeReport,
    error_histogram,
)
from profile_store.audiences.accuracy_run import AccuracyRun, run_accuracy
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.audiences.window_counts import CountedWindow
from profile_store.audiences.window_inputs import window_inputs
from profile_store.lake.layout import AUDIENCE_SKETCHES, day_dir
from resources.hbase import HBaseResource
from resources.lake import LakeResource

ACCURACY_LEGEND = f"""\
| key | meaning |
| --- | --- |
| `accuracy_bars` | every judged figure beside its limit and whether it met it |
| `estimation_mode_answers` | queries answered by an estimate (a sketch past its capacity) |
| `estimation_mode_sought` | of them, trees added to the mix because their pairs estimate |
| `estimation_mode_judged_to_answer` | of them, those {JUDGED_TO_ANSWER} |
| `estimation_mode_answer_mean_error_pct` | their mean abs(estimate - exact) / exact, in % |
| `estimation_mode_answer_under_1pct_error_pct` | % of them within 1% of the answer (10%: alike) |
| `estimation_mode_operand_...` | the same of every estimation-mode answer, to its operand |
| `estimation_mode_bounds_hold_pct` | % of them whose 95% bounds hold the exact answer |
| `exact_mode_answers`, `exact_mode_max_error_pct` | exact-mode answers must be exact |
| `max_...` / `min_...` | the limit the value before it must meet (check config) |
| `error_histogram` | estimation-mode answers by error, to the answer and to the operand |
| `accuracy_by_day` | each judged day of the window: its mean error beside the limit |
| `days_counted` | days of the window counted from their events now (others: counts read back) |

The operand of an answer is the largest set its sketches read: a theta sketch's error is
proportional to it (for an intersection or a difference, its operands' union), not to the
answer, so an answer that is a small share of it is judged relative to it alone. Bounds are
compared in whole users, as the API gives them (the lower rounded down, the upper up).
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
        description=(
            "A bar missed over fewer answers (estimation-mode ones, or those judged relative to "
            "the answer) is a warning, not an error."
        ),
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
        "A fixed-seed mix of distinct audience queries (leaves, unions, intersections of very "
        "different sizes, small intersections and differences, min_count, attribute filters) "
        "answered from HBase sketches and exactly by Spark over the lake; when few answers "
        "estimate, trees around the pairs whose sketches estimate are added. Exact-mode answers "
        "must be exact. Estimation-mode answers pass on mean error <= 3%, >= 35% under 1% and "
        f">= 90% under 10% twice: relative to the answer (those {JUDGED_TO_ANSWER}, the "
        "largest set their sketches read) and relative to the operand (all), and on 95% bounds "
        "in whole users holding the exact answer in >= 93%; a miss over fewer than 20 answers "
        "is a warning."
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
    if not days:
        raise RuntimeError(f"{day}: no built day of audience sketches to check")
    session = spark.spark_session
    events, decisions = window_inputs(session, storage, days)

    @contextlib.contextmanager
    def open_table():
        with hbase.connection() as connection:
            yield connection.table(SKETCH_TABLE)

    engine = AudienceEngine(open_table, min_retained_for_estimate=0)
    counted = CountedWindow(session, storage, days, events)
    run = run_accuracy(
        counted,
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
    # Too few answers behind every missed figure to be sure: a miss is said (a warning), not hidden.
    severity = AssetCheckSeverity.ERROR if report.sure_failure(bars) else AssetCheckSeverity.WARN
    description = report.summary(bars)
    if failures:
        description = "; ".join(failures) + f" -- {description}"
    exact = report.exact_mode
    metadata = {
        "queries": report.overall.answers,
        "days_queried": f"{days[0]}..{days[-1]} ({len(days)} days)",
        "days_counted": len(counted.days_counted),
        "accuracy_bars": _bars_table(report, bars),
        # Every share is a percent (suffix _pct), each followed by the limit it must meet.
        **_estimation_metadata(report, bars),
        "estimation_mode_sought": run.sought,
        "exact_mode_answers": exact.answers if exact else 0,
        "exact_mode_max_error_pct": exact_mode_max_error_pct(exact),
        "max_exact_mode_error_pct": config.max_exact_mode_error * 100,
        "all_bounds_hold_pct": round(report.overall.bounds_coverage * 100, 2),
        "error_percentiles_pct": MetadataValue.json(_percentiles(report)),
        "error_histogram": _histogram_table(run),
        "legend": MetadataValue.md(ACCURACY_LEGEND),
        "query_latency_ms": MetadataValue.json(
            {
                "p50": round(float(np.percentile(run.latencies_ms, 50)), 2),
                "p99": round(float(np.percentile(run.latencies_ms, 99)), 2),
            }
        ),
        "worst_queries": MetadataValue.json(run.worst),
    }
    if len(days) > 1:
        today = _day_row(day.isoformat(), not failures, metadata)
        metadata["accuracy_by_day"] = _days_table(context, days, today, config.window_days)
    result = AssetCheckResult(
        passed=not failures, severity=severity, description=description, metadata=metadata
    )
    return logged(context, result)


BARS_SCHEMA = TableSchema(
    columns=[
        TableColumn("answers", "string", description="exact mode or estimation mode"),
        TableColumn("relative_to", "string", description="the answer, its operand, or none"),
        TableColumn("count", "int", description="answers the figure is measured over"),
        TableColumn("figure", "string"),
        TableColumn("value_pct", "float", description="measured, in percent"),
        TableColumn("limit_pct", "float", description="the bar, in percent (check config)"),
        TableColumn("met", "bool"),
    ]
)


def _bars_table(report: AccuracyReport, bars: AccuracyBars) -> MetadataValue:
    """The day's judged figures with their limits: one table the check's page shows as is."""
    exact = report.exact_mode_figure(bars)
    rows = [("exact mode", exact)] if exact is not None else []
    rows += [("estimation mode", figure) for figure in report.estimation_figures(bars)]
    records = [
        TableRecord(
            {
                "answers": mode,
                "relative_to": figure.relative_to or "-",
                "count": figure.answers,
                "figure": figure.name,
                "value_pct": round(figure.value * 100, 3),
                "limit_pct": round(figure.limit * 100, 3),
                "met": figure.met,
            }
        )
        for mode, figure in rows
    ]
    return MetadataValue.table(records, BARS_SCHEMA)


def _estimation_metadata(report: AccuracyReport, bars: AccuracyBars) -> dict:
    """The estimation-mode figures as numbers (Dagster plots each over the evaluations), each
    followed by its limit."""
    if report.estimation_mode is None:
        return {"estimation_mode_answers": 0}
    entries: dict = {
        "estimation_mode_answers": report.estimation_answers,
        "estimation_mode_judged_to_answer": report.estimation_mode.judged_to_answer,
    }
    for figure in report.estimation_figures(bars):
        entries[f"estimation_mode_{figure.key}_pct"] = round(figure.value * 100, 3)
        entries[figure.limit_key] = round(figure.limit * 100, 3)
    return entries


def _percentiles(report: AccuracyReport) -> dict:
    """The estimation-mode answers' error percentiles on each scale, in percent."""

    def of(summary: ErrorSummary | None) -> dict | None:
        if summary is None:
            return None
        return {
            name: round(getattr(summary, name) * 100, 3) for name in ("p50", "p90", "p99", "max")
        }

    estimated = report.estimation_mode
    if estimated is None:
        return {}
    return {"to_answer": of(estimated.to_answer), "to_operand": of(estimated.to_operand)}


HISTOGRAM_SCHEMA = TableSchema(
    columns=[
        TableColumn("error", "string", description="the bin of errors, in percent"),
        TableColumn(
            "answers", "int", description="estimation-mode answers judged relative to the answer"
        ),
        TableColumn(
            "answers_to_operand",
            "int",
            description="every estimation-mode answer, by its error relative to its operand",
        ),
    ]
)


def _histogram_table(run: AccuracyRun) -> MetadataValue:
    records = [
        TableRecord({"error": b.label, "answers": b.to_answer, "answers_to_operand": b.to_operand})
        for b in error_histogram(run.errors)
    ]
    return MetadataValue.table(records, HISTOGRAM_SCHEMA)


DAYS_SCHEMA = TableSchema(
    columns=[
        TableColumn("day", "string", description="the partition the check judged"),
        TableColumn("passed", "bool", description="the check's verdict that day"),
        TableColumn("answers", "int", description="estimation-mode answers"),
        TableColumn("judged_to_answer", "int", description=f"of them, {JUDGED_TO_ANSWER}"),
        TableColumn("mean_error_pct", "float", description="their mean error, of the answer"),
        TableColumn("limit_pct", "float", description="the limit of that mean"),
        TableColumn("met", "bool"),
    ]
)
EVALUATIONS_PER_DAY = 5  # the check's recorded evaluations read back per day of the window


def exact_mode_max_error_pct(exact: ModeReport | None) -> float:
    """The exact mode's largest error relative to its answer, in percent; 0 when none of its
    answers was judged relative to itself (or it gave none)."""
    if exact is None or exact.to_answer is None:
        return 0.0
    return round(exact.to_answer.max * 100, 3)


def _day_row(day: str, passed: bool, figures: Mapping[str, object]) -> dict:
    """A day's row of ``accuracy_by_day`` from its evaluation's metadata values (None where
    nothing was judged relative to the answer)."""
    mean = figures.get("estimation_mode_answer_mean_error_pct")
    limit = figures.get("max_answer_mean_error_pct")
    return {
        "day": day,
        "passed": passed,
        "answers": figures.get("estimation_mode_answers"),
        "judged_to_answer": figures.get("estimation_mode_judged_to_answer"),
        "mean_error_pct": mean,
        "limit_pct": limit,
        "met": mean <= limit
        if isinstance(mean, int | float) and isinstance(limit, int | float)
        else None,
    }


def _days_table(
    context: AssetCheckExecutionContext, days: list[date], today: dict, window_days: int
) -> MetadataValue:
    """The window's days the check judged, oldest first: each earlier day as its newest
    recorded evaluation says, then this one."""
    key = context.check_specs[0].key
    wanted = {d.isoformat() for d in days[:-1]}
    rows: dict[str, dict] = {}
    history = context.instance.event_log_storage.get_asset_check_execution_history(
        key, limit=EVALUATIONS_PER_DAY * window_days
    )
    for record in history:  # newest first
        evaluation = record.evaluation
        if record.partition not in wanted or record.partition in rows:
            continue
        if not isinstance(evaluation, AssetCheckEvaluation):
            continue  # planned, not evaluated
        figures = {name: value.value for name, value in evaluation.metadata.items()}
        if "estimation_mode_answers" in figures:  # judged (not "nothing to judge")
            rows[record.partition] = _day_row(record.partition, evaluation.passed, figures)
    rows[today["day"]] = today
    records = [TableRecord(rows[d]) for d in sorted(rows)]
    return MetadataValue.table(records, DAYS_SCHEMA)


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
