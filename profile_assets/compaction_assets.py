"""``compacted_profiles``: every id of a person carries the person's segments and counters."""

from datetime import date

from dagster import (
    AssetDep,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster_pyspark import LazyPySparkResource
from pydantic import Field

from profile_assets.partitions import daily_partitions, previous_day
from profile_store.hbase.pool import table_opener
from profile_store.profiles.pipeline import BULK_MIN_ROWS, CompactionSettings, compact_day
from profile_store.profiles.rules_in_force import read_rules_in_force
from profile_store.profiles.segment_rules import SegmentRule
from profile_store.profiles.table import PROFILE_TABLE, ensure_table
from resources.hbase import HBaseResource
from resources.lake import LakeResource


class CompactionConfig(Config):
    """The compaction's settings a run may change; the segment rules are the lake's
    (``profiles segment-rules``), the live job's as well."""

    half_life_days: float = Field(default=7.0, description="Half-life of the event counters.")
    max_associations: int = Field(
        default=100, description="Other ids listed on a profile row (super-node guard)."
    )
    weight_threshold: float = Field(
        default=0.9, description="Edges of at least this weight (as identity_components)."
    )
    full_recompute: bool = Field(
        default=False,
        description="Rebuild the profile state from every event up to the day and rewrite "
        "every profile, instead of folding the day into the day before.",
    )

    profile_write: str = Field(
        default="auto",
        description="How profile rows reach HBase: 'bulk' (Spark writes cell files that the "
        "embedded gateway's store adopts, one transaction per file), 'thrift' (puts from the "
        "executors; the only path to an HBase Thrift server) or 'auto' (bulk from "
        "bulk_min_rows rows on, when the store is the embedded gateway's).",
    )
    bulk_min_rows: int = Field(
        default=BULK_MIN_ROWS,
        description="With profile_write 'auto': rows from which the embedded gateway's store "
        "takes them in bulk (fewer go by Thrift puts).",
    )

    def settings(self, rules: tuple[SegmentRule, ...]) -> CompactionSettings:
        return CompactionSettings(
            rules=rules,
            half_life_days=self.half_life_days,
            max_associations=self.max_associations,
            weight_threshold=self.weight_threshold,
            full_recompute=self.full_recompute,
            profile_write=self.profile_write,
            bulk_min_rows=self.bulk_min_rows,
        )


@asset(
    partitions_def=daily_partitions,
    group_name="profiles",
    kinds={"spark", "hbase"},
    deps=[
        "raw_events",
        "identity_components",
        "audience_activations",
        AssetDep("compacted_profiles", partition_mapping=previous_day),
    ],
    description=(
        "Profile rows in the HBase table `profiles`: every id of a person (identity component) "
        "carries the component's non-expired segments (max expiry wins), merged decaying "
        "counters, its master (absent on the master), the component size and a capped list of "
        "the other ids; plus edge rows and alternate-id lookup rows. Segments come from the "
        "segment rules in force (`profiles segment-rules show`), the segment feed and the "
        "activated saved audiences. Folds the day into the "
        "profile state and rewrites only the components that changed."
    ),
)
def compacted_profiles(
    context: AssetExecutionContext,
    config: CompactionConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
    hbase: HBaseResource,
) -> MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    storage = lake.storage()
    in_force = read_rules_in_force(storage)
    context.log.info(f"{day}: {in_force.describe()}")
    with hbase.connection() as connection:
        ensure_table(connection, PROFILE_TABLE)
    summary = compact_day(
        spark.spark_session,
        storage,
        table_opener(hbase.pool(), PROFILE_TABLE),
        hbase.thrift_address(),
        day,
        config.settings(in_force.rules),
        store_dir=hbase.data_dir if hbase.embedded else None,
    )
    context.log.info(
        f"{day} ({summary.mode}): {summary.rows_written:,} profile rows in "
        f"{summary.components_rewritten:,} components rewritten"
    )
    return MaterializeResult(
        metadata={
            "dagster/row_count": summary.rows_written,
            "mode": summary.mode,
            "profile_write": summary.write_path,
            "profiles_changed": summary.profiles_changed,
            "components_rewritten": summary.components_rewritten,
            "stale_cells_removed": summary.stale_cells_removed,
            "edge_rows_written": summary.edges_written,
            "edge_rows_withdrawn": summary.edges_withdrawn,
            "lookup_rows_written": summary.lookups_written,
            "unsynced_segments_consumed": summary.unsynced_consumed,
            "live_cells_superseded": summary.live_cells_superseded,
            "profiles_with_segments": summary.profiles_with_segments,
            "segment_members": MetadataValue.json(summary.segment_members),
            "segment_rules_digest": in_force.digest,
            "segment_rules_count": len(in_force.rules),
            "hbase_table": PROFILE_TABLE,
        }
    )
