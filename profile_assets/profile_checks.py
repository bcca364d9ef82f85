"""Checks of the identity graph and of the compacted profiles in HBase."""

import random
from datetime import date

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

from profile_assets.check_results import nothing_to_judge, problems_found
from profile_assets.compaction_assets import compacted_profiles
from profile_assets.identity_assets import identity_components, identity_edges
from profile_assets.partitions import daily_partitions
from profile_assets.recorded import recorded_metadata
from profile_store.identity.pipeline import (
    ASSIGNMENT_SCHEMA,
    KEYS_SCHEMA,
    PROFILES_SCHEMA,
    read_history,
)
from profile_store.identity.quality import identity_quality
from profile_store.identity.rules import BridgingRules
from profile_store.identity.settings import non_bridging_message
from profile_store.lake.layout import (
    GROUND_TRUTH,
    IDENTITY_COMPONENTS,
    IDENTITY_KEYS,
    IDENTITY_PROFILES,
    day_dir,
)
from profile_store.profiles.consistency import component_agreement, master_references
from profile_store.profiles.pipeline import end_of_day_ms
from profile_store.profiles.table import PROFILE_TABLE
from resources.hbase import HBaseResource
from resources.identity import IdentityResource
from resources.lake import LakeResource

IDENTITIES = f"{GROUND_TRUTH}/identities.parquet"
BRIDGING_KINDS_CHECK = "identity_bridging_kinds"


class IdentityQualityConfig(Config):
    min_precision: float = Field(default=0.99, description="Pairwise precision bar.")
    min_recall: float = Field(
        default=0.95, description="Pairwise recall bar over the pairs the evidence can link."
    )


@asset_check(
    asset=identity_components,
    partitions_def=daily_partitions,
    description=(
        "Components against the answer key in ground_truth/identities.parquet (written by the "
        "sample generator): pairwise precision >= 0.99 and recall >= 0.95 of the deterministic "
        "rules (pairs that the lake's logins and email hashes can link up to the day); B-cubed "
        "precision, recall and F1 reported. Lakes without an answer key (your own data) pass "
        "saying there was nothing to judge."
    ),
)
def identity_quality_check(
    context: AssetCheckExecutionContext,
    config: IdentityQualityConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
) -> AssetCheckResult:
    day = date.fromisoformat(context.partition_key)
    storage = lake.storage()
    if not storage.exists(IDENTITIES):
        return nothing_to_judge(f"no answer key at {IDENTITIES} to compare the components with")
    session = spark.spark_session
    quality = identity_quality(
        session.read.schema(ASSIGNMENT_SCHEMA).parquet(
            storage.spark_uri(day_dir(IDENTITY_COMPONENTS, day))
        ),
        read_history(session, storage, IDENTITY_PROFILES, PROFILES_SCHEMA, day),
        session.read.parquet(storage.spark_uri(IDENTITIES)),
        read_history(session, storage, IDENTITY_KEYS, KEYS_SCHEMA, day),
    )
    if not quality.predicted_pairs and not quality.linkable_pairs:
        reason = f"no linked and no linkable pair of profiles up to {day}"
        return nothing_to_judge(reason, profiles=quality.profiles)
    failures = []
    if quality.precision < config.min_precision:
        failures.append(f"precision {quality.precision:.4f} < {config.min_precision}")
    if quality.recall < config.min_recall:
        failures.append(f"recall {quality.recall:.4f} < {config.min_recall}")
    return AssetCheckResult(
        passed=not failures,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(failures) or "precision and recall bars met",
        metadata={
            # Percents (suffix _pct), each measured value followed by the bar it must meet.
            "pairwise_precision_pct": round(quality.precision * 100, 3),
            "min_pairwise_precision_pct": config.min_precision * 100,
            "pairwise_recall_pct": round(quality.recall * 100, 3),
            "min_pairwise_recall_pct": config.min_recall * 100,
            "bcubed_precision_pct": round(quality.bcubed_precision * 100, 3),
            "bcubed_recall_pct": round(quality.bcubed_recall * 100, 3),
            "bcubed_f1_pct": round(quality.bcubed_f1 * 100, 3),
            "profiles": quality.profiles,
            "predicted_pairs": quality.predicted_pairs,
            "linkable_pairs": quality.linkable_pairs,
        },
    )


@asset_check(
    asset=compacted_profiles,
    partitions_def=daily_partitions,
    description=(
        "Every s:master column in the profiles table names an existing profile row that is "
        "itself a master (one hop, never a chain)."
    ),
)
def profiles_master_consistency(
    context: AssetCheckExecutionContext, hbase: HBaseResource
) -> AssetCheckResult:
    with hbase.connection() as connection:
        references = master_references(connection.table(PROFILE_TABLE))
    if not references.dependents:
        return nothing_to_judge("no profile row names a master")
    return problems_found(
        references.problems,
        "every master reference resolves",
        dependent_profiles=references.dependents,
        masters_referenced=references.masters,
        problems=MetadataValue.json(references.problems),
    )


class CompactionAgreementConfig(Config):
    sample_components: int = Field(default=200, description="Components read back from HBase.")
    seed: int = Field(default=20261101, description="Seed of the sample.")


@asset_check(
    asset=compacted_profiles,
    partitions_def=daily_partitions,
    description=(
        "A fixed-seed sample of multi-profile components (identity_components after the day) "
        "read back from HBase: every profile returns the same segments and counters and names "
        "the component's master. A day run again after later days leaves their rows alone: "
        "a component holding a later day's row is counted apart, not judged."
    ),
)
def profiles_compaction_agreement(
    context: AssetCheckExecutionContext,
    config: CompactionAgreementConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
    hbase: HBaseResource,
) -> AssetCheckResult:
    day = date.fromisoformat(context.partition_key)
    storage = lake.storage()
    assignment = spark.spark_session.read.schema(ASSIGNMENT_SCHEMA).parquet(
        storage.spark_uri(day_dir(IDENTITY_COMPONENTS, day))
    )
    masters = sorted(r.master for r in assignment.select("master").distinct().collect())
    sample = random.Random(config.seed).sample(masters, min(config.sample_components, len(masters)))
    if not sample:
        return nothing_to_judge(f"no component of several profiles after {day}")
    members = assignment.where(F.col("master").isin(sample)).select("profile", "master").collect()
    components: dict[str, list[str]] = {}
    for row in members:
        components.setdefault(row.master, []).append(row.profile)
    with hbase.connection() as connection:
        agreement = component_agreement(
            connection.table(PROFILE_TABLE), components, as_of_ms=end_of_day_ms(day)
        )
    if not agreement.components:
        return nothing_to_judge(
            f"every sampled component of {day} holds a later day's rows (the day ran again "
            "after later days, whose rows it leaves alone)",
            components_of_a_later_day=agreement.later,
        )
    return problems_found(
        agreement.problems,
        "every sampled component agrees",
        components_sampled=agreement.components,
        components_of_a_later_day=agreement.later,
        profiles_read=agreement.profiles,
        problems=MetadataValue.json(agreement.problems[:20]),
    )


def bridging_kinds_result(
    alt_id_kinds: dict[str, int], non_bridging: dict[str, int], rules: BridgingRules
) -> AssetCheckResult:
    """A warning when ids of a kind the rules do not bridge came in: they link nothing."""
    metadata = {
        "alt_id_kinds": MetadataValue.json(alt_id_kinds),
        "bridging_alt_id_kinds": MetadataValue.json(list(rules.bridging_alt_id_kinds)),
    }
    if not alt_id_kinds:
        return nothing_to_judge("no alternate id in the day's events", **metadata)
    if not non_bridging:
        return AssetCheckResult(
            passed=True, description="every alternate id kind of the day bridges", metadata=metadata
        )
    return AssetCheckResult(
        passed=False,
        severity=AssetCheckSeverity.WARN,
        description=non_bridging_message(list(non_bridging), rules),
        metadata={**metadata, "non_bridging_alt_id_kinds": MetadataValue.json(non_bridging)},
    )


# A check of its own, not a check spec of identity_edges: a spec inside a self-dependent
# daily asset made automation request the asset's previous day with every new one.
@asset_check(
    asset=identity_edges,
    name=BRIDGING_KINDS_CHECK,
    partitions_def=daily_partitions,
    description="Warns when the day's events carry an alternate id kind that the identity "
    "configuration does not bridge: those ids link nothing. Reads the kinds identity_edges "
    "recorded for the day.",
)
def identity_bridging_kinds(
    context: AssetCheckExecutionContext, identity: IdentityResource
) -> AssetCheckResult:
    recorded = recorded_metadata(context, identity_edges.key)
    if recorded is None:
        return nothing_to_judge(f"identity_edges of {context.partition_key} not materialized")
    present, non_bridging = (
        dict(recorded[name].value) if name in recorded else {}
        for name in ("alt_id_kinds", "non_bridging_alt_id_kinds")
    )
    return bridging_kinds_result(present, non_bridging, identity.rules())


profile_checks = [
    identity_bridging_kinds,
    identity_quality_check,
    profiles_master_consistency,
    profiles_compaction_agreement,
]
