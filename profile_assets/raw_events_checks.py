"""Asset checks on ``raw_events``: Great Expectations suites over the clean partition.

They are blocking: a partition that breaks its schema, ids or time window must not flow into
sketches and profiles.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import NamedTuple

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    Config,
    MetadataValue,
    asset_check,
)
from dagster_pyspark import LazyPySparkResource
from pydantic import Field
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from profile_assets.check_results import logged, nothing_to_judge
from profile_assets.partitions import daily_partitions
from profile_assets.raw_events import raw_events
from profile_assets.recorded import recorded_metadata
from profile_store.events import expectations
from profile_store.events.ingest import landing_files
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.lake.layout import events_day, quarantine_day
from profile_store.lake.storage import LakeStorage
from resources.lake import LakeResource


def _partition(
    context: AssetCheckExecutionContext,
    spark: LazyPySparkResource,
    lake: LakeResource,
    as_written: bool = False,
):
    """The day's clean events, read with the events' schema; ``as_written``: with the schema
    of the files, which Spark infers (a job), for the check that judges that schema."""
    day = date.fromisoformat(context.partition_key)
    reader = spark.spark_session.read
    if not as_written:
        reader = reader.schema(EVENTS_SCHEMA)
    return day, reader.parquet(lake.storage().spark_uri(events_day(day)))


def _has_clean_events(context: AssetCheckExecutionContext, df: DataFrame) -> bool:
    """From the clean rows raw_events recorded, or from the partition if it recorded none."""
    recorded = recorded_metadata(context, raw_events.key)
    if recorded is None:
        return not df.isEmpty()
    return recorded["dagster/row_count"].value > 0


def _suite_result(outcome: expectations.SuiteOutcome) -> AssetCheckResult:
    return AssetCheckResult(
        passed=outcome.success,
        severity=AssetCheckSeverity.ERROR,
        description=outcome.summary(),
        metadata={
            "failed_expectations": MetadataValue.json(outcome.failed),
            "expectations": MetadataValue.json(outcome.expectations),
        },
    )


@dataclass(frozen=True)
class SuiteCheck:
    """One Great Expectations suite over the day's clean events, as one blocking check."""

    name: str
    description: str
    suite: Callable[[date], list]
    judges_a_day_without_events: bool = False
    """The schema holds for an empty day too; the other suites have nothing to measure there."""
    judges_the_written_schema: bool = False
    """Reads the files' own schema; the other suites read the columns as the events' schema."""


SUITE_CHECKS = (
    SuiteCheck(
        "raw_events_schema",
        "Columns and their order are exactly the clean event schema (GE).",
        lambda day: expectations.schema_expectations(),
        judges_a_day_without_events=True,
        judges_the_written_schema=True,
    ),
    SuiteCheck(
        "raw_events_ids",
        "event_id, app_id, user_id and id_type are present; event_id is unique (GE).",
        lambda day: expectations.id_expectations(),
    ),
    SuiteCheck(
        "raw_events_time_in_day",
        "Every event_time lies inside the partition's UTC day (GE).",
        expectations.event_time_expectations,
    ),
    SuiteCheck(
        "raw_events_event_type",
        "Every event has a non-empty event_type (GE).",
        lambda day: expectations.event_type_expectations(),
    ),
)


def suite_check(check: SuiteCheck) -> AssetChecksDefinition:
    @asset_check(
        name=check.name,
        asset=raw_events,
        partitions_def=daily_partitions,
        blocking=True,
        description=check.description,
    )
    def run_suite(
        context: AssetCheckExecutionContext, spark: LazyPySparkResource, lake: LakeResource
    ) -> AssetCheckResult:
        day, df = _partition(context, spark, lake, as_written=check.judges_the_written_schema)
        if not check.judges_a_day_without_events and not _has_clean_events(context, df):
            return logged(context, nothing_to_judge(f"no clean events on {day}"))
        outcome = expectations.run_suite(df, check.name, check.suite(day))
        return logged(context, _suite_result(outcome))

    return run_suite


class QuarantineShareConfig(Config):
    max_share: float = Field(
        default=0.02,
        description=(
            "Largest acceptable share of received rows quarantined, and of landing bytes in "
            "unreadable files."
        ),
    )


def rows_judged_from(max_share: float) -> int:
    """The fewest received rows whose quarantined share says something about the feed: below
    1 / max_share rows (50 at 2%), a single bad line is already over the limit."""
    return math.ceil(round(1 / max_share, 9)) if max_share > 0 else 1


class QuarantineCounts(NamedTuple):
    clean_rows: int
    quarantined_rows: int
    """Rows quarantined one by one (unreadable files are counted apart)."""
    unreadable_files: int
    unreadable_bytes: int


def _recorded_counts(recorded: dict) -> QuarantineCounts:
    """The counts raw_events recorded when it wrote the partitions."""
    unreadable = recorded["unreadable_file_list"].value
    return QuarantineCounts(
        recorded["dagster/row_count"].value,
        recorded["quarantined_rows"].value,
        len(unreadable),
        sum(file["bytes"] for file in unreadable),
    )


def _lake_counts(session: SparkSession, storage: LakeStorage, day: date) -> QuarantineCounts:
    """The counts read back from the day's clean and quarantine partitions."""
    clean = session.read.parquet(storage.spark_uri(events_day(day))).count()
    quarantine = session.read.parquet(storage.spark_uri(quarantine_day(day)))
    if "file_bytes" not in quarantine.columns:  # written before whole files were quarantined
        return QuarantineCounts(clean, quarantine.count(), 0, 0)
    counts = quarantine.agg(
        F.count(F.when(F.col("file_bytes").isNull(), 1)).alias("rows"),
        F.count("file_bytes").alias("files"),
        F.coalesce(F.sum("file_bytes"), F.lit(0)).alias("bytes"),
    ).first()
    if counts is None:  # a global aggregation has one row, even over no rows
        raise RuntimeError("the quarantine's counts returned no row")
    return QuarantineCounts(clean, counts["rows"], counts["files"], counts["bytes"])


@asset_check(
    asset=raw_events,
    partitions_def=daily_partitions,
    blocking=True,
    description=(
        "The share of the day's received rows sent to quarantine, and the share of its landing "
        "bytes in unreadable (truncated or undecodable) files, each stay under a limit. The row "
        "share is judged from 1 / limit received rows (50 at 2%): below that one bad line is "
        "already over it."
    ),
)
def raw_events_quarantine_share(
    context: AssetCheckExecutionContext,
    config: QuarantineShareConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
) -> AssetCheckResult:
    day = date.fromisoformat(context.partition_key)
    storage = lake.storage()
    recorded = recorded_metadata(context, raw_events.key)
    counts = (
        _lake_counts(spark.spark_session, storage, day)
        if recorded is None
        else _recorded_counts(recorded)
    )
    clean, quarantined, files, unreadable_bytes = counts
    total = clean + quarantined
    share = quarantined / total if total else 0.0
    landing_bytes = sum(f.size for f in landing_files(storage, day))
    unreadable_share = unreadable_bytes / landing_bytes if landing_bytes else 0.0
    judged_from = rows_judged_from(config.max_share)
    rows_judged = total >= judged_from
    metadata = {
        "quarantined_pct": round(share * 100, 4),
        "max_quarantined_pct": config.max_share * 100,
        "received_rows_judged_from": judged_from,
        "unreadable_bytes_pct": round(unreadable_share * 100, 4),
        "max_unreadable_bytes_pct": config.max_share * 100,
        "quarantined_rows": quarantined,
        "clean_rows": clean,
        "unreadable_files": files,
    }
    if not rows_judged and not unreadable_bytes:
        reason = (
            f"{total:,} received rows on {day} (a share is judged from {judged_from:,}: one bad "
            f"line of fewer is over {config.max_share:.0%}), no unreadable file"
        )
        return logged(context, nothing_to_judge(reason, **metadata))
    limit = f"limit {config.max_share:.0%}" if rows_judged else f"judged from {judged_from:,}"
    description = (
        f"{share:.2%} of {total:,} received rows quarantined ({limit}); "
        f"{unreadable_share:.2%} of landing bytes in {files} unreadable files "
        f"(limit {config.max_share:.0%})"
    )
    rows_pass = share <= config.max_share or not rows_judged
    result = AssetCheckResult(
        passed=rows_pass and unreadable_share <= config.max_share,
        severity=AssetCheckSeverity.ERROR,
        description=description,
        metadata=metadata,
    )
    return logged(context, result)


raw_events_checks = [*(suite_check(check) for check in SUITE_CHECKS), raw_events_quarantine_share]
