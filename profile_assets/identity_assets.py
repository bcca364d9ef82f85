"""Identity assets: bridging edges with the super-node guard, and connected components.

Both are daily and build on the days before them (the key history, the previous assignment),
so each declares a dependency on its own previous partition: a backfill runs the days in order.
Re-materializing an old day rewrites that day; the later days are then stale until they are
re-materialized in order too (or run one day with ``full_recompute``, which rebuilds the
assignment from every surviving edge up to that day).
"""

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
from profile_store.identity.pipeline import build_day_edges, update_components
from profile_store.identity.settings import non_bridging_message
from resources.identity import IdentityResource
from resources.lake import LakeResource


@asset(
    partitions_def=daily_partitions,
    group_name="identity",
    kinds={"spark", "parquet"},
    deps=["raw_events", AssetDep("identity_edges", partition_mapping=previous_day)],
    description=(
        "The day's bridging edges between profiles (same member_id, same alternate id, optional "
        "fuzzy IP/24 + user agent), a star to each key's first-seen profile, in "
        "identity_edges/date=D. Blocklisted keys and super-nodes (more profiles than the limit "
        "over the key history) make no edge and go to identity_quarantine/date=D. Also writes "
        "the day's key table (identity_keys) and profile first/last seen (identity_profiles). "
        "The rules come from the identity resource (PROFILES_IDENTITY_CONFIG)."
    ),
)
def identity_edges(
    context: AssetExecutionContext,
    identity: IdentityResource,
    spark: LazyPySparkResource,
    lake: LakeResource,
) -> MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    rules = identity.rules()
    summary = build_day_edges(spark.spark_session, lake.storage(), day, rules)
    context.log.info(
        f"{day}: {summary.edges:,} edges over {summary.profiles:,} profiles, "
        f"{summary.quarantined_keys:,} keys quarantined {summary.quarantined_by_reason}"
    )
    if summary.non_bridging_alt_id_kinds:
        context.log.warning(
            f"{day}: {non_bridging_message(list(summary.non_bridging_alt_id_kinds), rules)}"
        )
    return MaterializeResult(
        metadata={
            "dagster/row_count": summary.edges,
            "edges_by_rule": MetadataValue.json(summary.edges_by_rule),
            "profiles": summary.profiles,
            "bridging_keys": summary.keys,
            "quarantined_keys": summary.quarantined_keys,
            "quarantined_by_reason": MetadataValue.json(summary.quarantined_by_reason),
            "revoking_keys": summary.revoking_keys,
            "top_quarantined": MetadataValue.json(summary.top_quarantined),
            "edges_path": MetadataValue.path(summary.edges_uri),
            "quarantine_path": MetadataValue.path(summary.quarantine_uri),
            "alt_id_kinds": MetadataValue.json(summary.alt_id_kinds),
            "non_bridging_alt_id_kinds": MetadataValue.json(summary.non_bridging_alt_id_kinds),
        },
    )


class IdentityComponentsConfig(Config):
    weight_threshold: float = Field(
        default=0.9, description="Only edges with at least this weight join components."
    )
    full_recompute: bool = Field(
        default=False,
        description="Recompute from every surviving edge up to the day instead of applying "
        "the day's edges to the previous day's assignment.",
    )
    max_iterations: int = Field(default=64, description="Connected-components round limit.")


@asset(
    partitions_def=daily_partitions,
    group_name="identity",
    kinds={"spark", "parquet"},
    deps=["identity_edges", AssetDep("identity_components", partition_mapping=previous_day)],
    description=(
        "Connected components of the identity edges (weight >= threshold) with the oldest "
        "profile as master: identity_components/date=D is the assignment profile -> master "
        "after day D of the linked profiles (a profile absent from it has no link: its own "
        "component, counted in `singletons`), identity_components/_LATEST names the latest. "
        "Incremental: the day's new edges recompute only the components they touch. Metadata "
        "`merges`: known persons (a component, or an id seen on an earlier day without any "
        "link) absorbed into another today; `component_merges`: those of them that were "
        "components of 2+ ids."
    ),
)
def identity_components(
    context: AssetExecutionContext,
    config: IdentityComponentsConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
) -> MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    update = update_components(
        spark.spark_session,
        lake.storage(),
        day,
        threshold=config.weight_threshold,
        full_recompute=config.full_recompute,
        max_iterations=config.max_iterations,
    )
    change, summary = update.change, update.summary
    context.log.info(
        f"{day} ({update.mode}): {summary.components:,} components, "
        f"{update.singletons:,} singletons, "
        f"{change.profiles_touched:,} profiles touched, {change.merges:,} merges"
    )
    return MaterializeResult(
        metadata={
            "dagster/row_count": summary.linked_profiles,
            "mode": update.mode,
            "components": summary.components,
            "linked_profiles": summary.linked_profiles,
            "profiles": update.profiles,
            "singletons": update.singletons,
            "size_histogram": MetadataValue.json(summary.size_histogram),
            "largest_component_size": summary.largest_size,
            "largest_component_master": summary.largest_master or "",
            "merges": change.merges,
            "component_merges": change.component_merges,
            "splits": change.splits,
            "new_components": change.new_components,
            "profiles_touched": change.profiles_touched,
            "edges_recomputed": change.edges_recomputed,
            "iterations": change.iterations,
            "latest_updated": update.latest_updated,
            "snapshot_path": MetadataValue.path(update.snapshot_uri),
        }
    )
