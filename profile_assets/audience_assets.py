"""Audience assets: attribute statistics, the trimming decision, and the sketch tables."""

from datetime import date, timedelta

from dagster import (
    AssetDep,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    TimeWindowPartitionMapping,
    asset,
)
from dagster_pyspark import LazyPySparkResource
from pydantic import Field
from pyspark.sql import functions as F

from profile_assets.partitions import daily_partitions
from profile_store.audiences.attribute_stats import (
    ATTRIBUTE_STATS_SCHEMA,
    TrimRule,
    daily_attribute_stats,
    trim_decisions,
)
from profile_store.audiences.day_sketches import build_day_sketches
from profile_store.audiences.sketch_rows import MAX_PAIR_ROWS
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.lake.layout import (
    ATTRIBUTE_STATS,
    TRIMMED_ATTRIBUTES,
    day_dir,
    events_day,
)
from profile_store.settings import definitions as settings
from resources.hbase import HBaseResource
from resources.lake import LakeResource

TRIM_WINDOW_DAYS: int = settings.TRIM_WINDOW_DAYS.read()
SKETCH_LG_K: int = settings.SKETCH_LG_K.read()


@asset(
    partitions_def=daily_partitions,
    group_name="audiences",
    kinds={"spark", "parquet"},
    deps=["raw_events"],
    description=(
        "Per (app, event type, attribute) of one day: appearances and an HLL sketch of its "
        "values, so that trailing windows merge without re-reading events."
    ),
)
def attribute_stats(
    context: AssetExecutionContext, spark: LazyPySparkResource, lake: LakeResource
) -> MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    storage = lake.storage()
    session = spark.spark_session
    events = session.read.schema(EVENTS_SCHEMA).parquet(storage.spark_uri(events_day(day)))
    stats = daily_attribute_stats(events)
    target = storage.spark_uri(day_dir(ATTRIBUTE_STATS, day))
    stats.coalesce(1).write.mode("overwrite").parquet(target)
    written = session.read.schema(stats.schema).parquet(target)
    summary = written.agg(
        F.count(F.lit(1)).alias("rows"),
        F.countDistinct("app_id", "event_type").alias("event_types"),
    ).first()
    return MaterializeResult(
        metadata={
            "dagster/row_count": summary["rows"],
            "app_event_types": summary["event_types"],
            "path": MetadataValue.path(target),
        }
    )


class TrimConfig(Config):
    max_distinct: int = Field(default=100, description="Keep only with at most this many values.")
    max_distinct_ratio: float = Field(
        default=0.1,
        description="Keep only when distinct / appearances is below this (or few_values).",
    )
    few_values: int = Field(
        default=20,
        description=(
            "Keep an attribute of at most this many values whatever its ratio (small apps' "
            "categories)."
        ),
    )


@asset(
    partitions_def=daily_partitions,
    group_name="audiences",
    kinds={"spark", "parquet"},
    deps=[
        AssetDep(
            "attribute_stats",
            partition_mapping=TimeWindowPartitionMapping(
                start_offset=-(TRIM_WINDOW_DAYS - 1),
                end_offset=0,
                allow_nonexistent_upstream_partitions=True,
            ),
        )
    ],
    description=(
        f"The day's keep/trim decision per (app, event type, attribute), decided over a "
        f"trailing {TRIM_WINDOW_DAYS}-day window (at most 100 distinct values "
        "and distinct/appearances < 0.1; at most 20 values are kept whatever the ratio). "
        "Queries use it to refuse filters on trimmed attributes."
    ),
)
def trimmed_attributes(
    context: AssetExecutionContext,
    config: TrimConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
) -> MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    rule = TrimRule(
        config.max_distinct, config.max_distinct_ratio, TRIM_WINDOW_DAYS, config.few_values
    )
    storage = lake.storage()
    window = [day - timedelta(days=i) for i in range(rule.window_days)]
    present = [d for d in window if storage.exists(day_dir(ATTRIBUTE_STATS, d))]
    session = spark.spark_session
    stats = None
    for d in present:
        part = session.read.schema(ATTRIBUTE_STATS_SCHEMA).parquet(
            storage.spark_uri(day_dir(ATTRIBUTE_STATS, d))
        )
        part = part.withColumn("date", F.lit(d.isoformat()))
        stats = part if stats is None else stats.unionByName(part)
    if stats is None:  # the day's own stats come first (an upstream asset)
        raise RuntimeError(f"{day}: no attribute stats in the trim window")
    decisions = trim_decisions(stats, rule, len(present))
    target = storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, day))
    decisions.coalesce(1).write.mode("overwrite").parquet(target)
    written = session.read.schema(decisions.schema).parquet(target)
    counts = written.agg(
        F.count(F.lit(1)).alias("total"), F.count(F.when(F.col("kept"), 1)).alias("kept")
    ).first()
    kept, total = counts["kept"], counts["total"]
    trimmed_examples = [
        f"{r.app_id}/{r.event_type}/{r.attribute} ({r.distinct_values:.0f} values)"
        for r in written.where("NOT kept").orderBy(F.desc("distinct_values")).limit(10).collect()
    ]
    return MaterializeResult(
        metadata={
            "dagster/row_count": total,
            "kept_attributes": kept,
            "trimmed_attributes": total - kept,
            "window_days_present": len(present),
            "window_days": rule.window_days,
            "top_trimmed": MetadataValue.json(trimmed_examples),
            "path": MetadataValue.path(target),
        }
    )


class SketchConfig(Config):
    lg_k: int = Field(
        default=SKETCH_LG_K,
        description="log2 of the theta sketch size k: relative standard error ~ 1/sqrt(k).",
    )
    batch_size: int = Field(default=500, description="HBase puts per Thrift batch.")
    max_pair_rows: int = Field(
        default=MAX_PAIR_ROWS,
        description=(
            "Pair rows (two-attribute leaves in one multi-get) for attribute pairs with at most "
            "this many value pairs a day; 0 builds none."
        ),
    )


@asset(
    partitions_def=daily_partitions,
    group_name="audiences",
    kinds={"spark", "hbase"},
    deps=["raw_events", "trimmed_attributes"],
    description=(
        "Theta and events-per-user tuple sketches per (app, event type, day, combination of "
        "kept attributes) in the HBase table `sketches`, plus one aggregate row per (app, event "
        "type, day). Re-running a day leaves exactly that day's new rows."
    ),
)
def audience_sketches(
    context: AssetExecutionContext,
    config: SketchConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
    hbase: HBaseResource,
) -> MaterializeResult:
    counts = build_day_sketches(
        spark.spark_session,
        lake.storage(),
        hbase.connection,
        hbase.thrift_address(),
        date.fromisoformat(context.partition_key),
        config.lg_k,
        config.max_pair_rows,
        config.batch_size,
    )
    return MaterializeResult(
        metadata={
            **counts,
            "lg_k": config.lg_k,
            "hbase_table": SKETCH_TABLE,
        }
    )
