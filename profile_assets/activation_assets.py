"""``audience_activations``: saved audiences marked active, their members counted exactly in
Spark, as segment memberships that ``compacted_profiles`` writes to every id of each person."""

import math
from datetime import date

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset
from dagster_pyspark import LazyPySparkResource
from pyspark.sql import functions as F

from profile_assets.automation_conditions import ORDER_ONLY_DEPS
from profile_assets.partitions import daily_partitions
from profile_store.audiences.activation import HITS_SCHEMA, ActivatedAudience, activation_hits
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.query import QueryError, query_tree
from profile_store.audiences.saved import AUDIENCE_TABLE, SavedAudiences
from profile_store.audiences.saved import ensure_table as ensure_audience_table
from profile_store.audiences.sketch_table import sketch_table_opener
from profile_store.hbase.pool import table_opener
from profile_store.lake.layout import AUDIENCE_ACTIVATIONS, day_dir
from profile_store.profiles.pipeline import end_of_day_ms
from resources.hbase import HBaseResource
from resources.lake import LakeResource


def _report(result: ActivatedAudience, members: int, engine: AudienceEngine) -> dict:
    """What metadata shows of one audience: its exact members beside the sketch estimate of the
    same tree and days (which should hold the count within its 95% bounds)."""
    audience = result.audience
    if audience.activation is None:  # activated() yields only activated audiences
        raise ValueError(f"audience {audience.id}: not activated")
    entry = {
        "tenant": audience.tenant,
        "audience": audience.name,
        "audience_id": audience.id,
        "segment": audience.activation.segment,
        "ttl_days": audience.activation.ttl_days,
    }
    if result.skipped:
        return {**entry, "skipped": result.skipped}
    entry["members"] = members
    if result.query is None:  # only a skipped audience has no query
        raise ValueError(f"audience {audience.id}: evaluated without a query")
    try:
        estimate = engine.estimate(query_tree(result.query))
    except QueryError as exc:
        return {**entry, "sketch_estimate": None, "sketch_error": str(exc)}
    difference = (estimate.estimate - members) / members if members else None
    return {
        **entry,
        "sketch_estimate": round(estimate.estimate),
        "sketch_lower_95": math.floor(estimate.lower_95),
        "sketch_upper_95": math.ceil(estimate.upper_95),
        "relative_difference": None if difference is None else round(difference, 4),
        "within_bounds": estimate.lower_95 <= members <= estimate.upper_95,
    }


@asset(
    partitions_def=daily_partitions,
    group_name="audiences",
    kinds={"spark", "hbase"},
    deps=["raw_events", "audience_sketches"],
    metadata={ORDER_ONLY_DEPS: ["audience_sketches"]},
    description=(
        "Members of every saved audience marked active, counted exactly over the clean events "
        "with the estimate's tree semantics (`last_days` ends on the day), as segment "
        "memberships expiring `ttl_days` after the day; `compacted_profiles` writes them to "
        "every id of each member's person. Metadata compares each count with the sketch "
        "estimate of the same tree."
    ),
)
def audience_activations(
    context: AssetExecutionContext,
    spark: LazyPySparkResource,
    lake: LakeResource,
    hbase: HBaseResource,
) -> MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    storage = lake.storage()
    with hbase.connection() as connection:
        ensure_audience_table(connection)
    active = list(SavedAudiences(table_opener(hbase.pool(), AUDIENCE_TABLE)).activated())
    session = spark.spark_session
    hits, results = activation_hits(session, storage, active, day, end_of_day_ms(day))
    target = storage.spark_uri(day_dir(AUDIENCE_ACTIVATIONS, day))
    hits.write.mode("overwrite").parquet(target)  # also when empty: a re-run replaces the day
    members = {}
    if results:
        written = session.read.schema(HITS_SCHEMA).parquet(target)
        counted = written.groupBy("audience_id").agg(F.count("*").alias("n"))
        members = {row.audience_id: row.n for row in counted.collect()}
    engine = AudienceEngine(sketch_table_opener(hbase.pool()))
    reports = [_report(r, members.get(r.audience.id, 0), engine) for r in results]
    for report in reports:
        if "skipped" in report:
            context.log.warning(
                f"audience {report['audience']!r} ({report['tenant']}) not activated on {day}: "
                f"{report['skipped']}"
            )
    return MaterializeResult(
        metadata={
            "dagster/row_count": sum(members.values()),
            "active_audiences": len(active),
            "skipped_audiences": sum(1 for r in reports if "skipped" in r),
            "audiences": MetadataValue.json(reports),
        }
    )
