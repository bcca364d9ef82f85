"""The identity graph over the lake: one day's edges, and one day's component update.

Areas (``profile_store.lake.layout``): ``identity_keys``, ``identity_profiles``,
``identity_edges``, ``identity_quarantine`` per day; ``identity_components/date=D`` the
assignment after day D (linked profiles only: a profile seen up to D and absent from it has no
link and is its own component, its own master, of size 1; every reader treats it so, and
writing every profile each day would multiply the day's writes for nothing), and
``identity_components/_LATEST`` the name of the latest one (a pointer, not a copy: rewriting
millions of rows to a second place would double a day's writes).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DateType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from profile_store.identity.edges import day_edges
from profile_store.identity.incremental import (
    AssignmentSummary,
    DayChange,
    apply_day,
    day_change,
    full_day,
    summarize,
    summarize_day,
)
from profile_store.identity.keys import day_keys, day_profiles, profiles_first_seen
from profile_store.identity.rules import BridgingRules
from profile_store.identity.settings import non_bridging_kinds
from profile_store.identity.super_nodes import REASON_BLOCKLIST, REASON_SUPER_NODE
from profile_store.lake.layout import (
    IDENTITY_COMPONENTS,
    IDENTITY_COMPONENTS_LATEST,
    IDENTITY_EDGES,
    IDENTITY_KEYS,
    IDENTITY_PROFILES,
    IDENTITY_QUARANTINE,
    day_dir,
    events_day,
)
from profile_store.lake.storage import LakeStorage

_DATE = StructField("date", DateType())
KEYS_SCHEMA = StructType(
    [
        StructField("key_type", StringType()),
        StructField("key", StringType()),
        StructField("profile", StringType()),
        StructField("first_seen", TimestampType()),
        StructField("last_seen", TimestampType()),
        StructField("events", LongType()),
    ]
)
PROFILES_SCHEMA = StructType(
    [
        StructField("profile", StringType()),
        StructField("id_type", StringType()),
        StructField("first_seen", TimestampType()),
        StructField("last_seen", TimestampType()),
        StructField("events", LongType()),
    ]
)
EDGES_SCHEMA = StructType(
    [
        StructField("profile_a", StringType()),
        StructField("profile_b", StringType()),
        StructField("rule", StringType()),
        StructField("key_type", StringType()),
        StructField("key", StringType()),
        StructField("weight", DoubleType()),
        StructField("first_seen", TimestampType()),
        StructField("last_seen", TimestampType()),
    ]
)
QUARANTINE_KEYS_SCHEMA = StructType(
    [StructField("key_type", StringType()), StructField("key", StringType())]
)
ASSIGNMENT_SCHEMA = StructType(
    [
        StructField("profile", StringType()),
        StructField("master", StringType()),
        StructField("first_seen", TimestampType()),
        StructField("size", LongType()),
    ]
)


def read_history(
    spark: SparkSession,
    storage: LakeStorage,
    area: str,
    schema: StructType,
    until: date,
    since: date | None = None,
) -> DataFrame:
    """Daily partitions of an area with a ``date`` column, ``since`` <= date <= ``until``."""
    if not storage.exists(area):
        return spark.createDataFrame([], StructType([*schema.fields, _DATE]))
    frame = (
        spark.read.schema(StructType([*schema.fields, _DATE]))
        .option("basePath", storage.spark_uri(area))
        .parquet(storage.spark_uri(area))
        .where(F.col("date") <= F.lit(until))
    )
    if since is not None:
        frame = frame.where(F.col("date") >= F.lit(since))
    return frame


@dataclass(frozen=True)
class EdgesSummary:
    """What one day of identity edges holds."""

    profiles: int
    keys: int
    edges: int
    edges_by_rule: dict[str, int]
    quarantined_keys: int
    quarantined_by_reason: dict[str, int]
    revoking_keys: int
    top_quarantined: list[dict]
    edges_uri: str
    quarantine_uri: str
    alt_id_kinds: dict[str, int] = field(default_factory=dict)  # kind present -> profiles
    non_bridging_alt_id_kinds: dict[str, int] = field(default_factory=dict)  # of those


def alt_id_kinds_present(events: DataFrame) -> dict[str, int]:
    """Per alternate id kind with a value in the day's events: how many profiles carry one."""
    pairs = events.select("user_id", F.explode("alt_ids").alias("kind", "value"))
    counts = (
        pairs.where(F.col("value").isNotNull())
        .groupBy("kind")
        .agg(F.countDistinct("user_id").alias("profiles"))
        .collect()
    )
    return {row["kind"]: int(row["profiles"]) for row in sorted(counts, key=lambda r: r["kind"])}


def build_day_edges(
    spark: SparkSession, storage: LakeStorage, day: date, rules: BridgingRules
) -> EdgesSummary:
    """Write the day's key table, profile table, edges and quarantine; summarise them."""
    events = spark.read.parquet(storage.spark_uri(events_day(day)))
    keys_uri = storage.spark_uri(day_dir(IDENTITY_KEYS, day))
    day_keys(events, rules).coalesce(4).write.mode("overwrite").parquet(keys_uri)
    profiles_uri = storage.spark_uri(day_dir(IDENTITY_PROFILES, day))
    # Counted while written (an observation of the write), not by a job reading them back.
    profiles_written = Observation("identity_profiles")
    (
        day_profiles(events)
        .observe(profiles_written, F.count(F.lit(1)).alias("rows"))
        .coalesce(4)
        .write.mode("overwrite")
        .parquet(profiles_uri)
    )

    keys = spark.read.schema(KEYS_SCHEMA).parquet(keys_uri)
    since = None if rules.history_days is None else day - timedelta(days=rules.history_days - 1)
    history = read_history(spark, storage, IDENTITY_KEYS, KEYS_SCHEMA, day, since)
    edges, quarantined = day_edges(keys, history, day, rules)
    edges_uri = storage.spark_uri(day_dir(IDENTITY_EDGES, day))
    quarantine_uri = storage.spark_uri(day_dir(IDENTITY_QUARANTINE, day))
    # The summary's counts are observed while the two are written, not read back by queries.
    rule_names = sorted({rules.rule_of(key_type) for key_type in rules.key_types})
    edges_written = Observation("identity_edges")
    edges.observe(
        edges_written,
        *[F.count(F.when(F.col("rule") == name, 1)).alias(name) for name in rule_names],
    ).coalesce(4).write.mode("overwrite").parquet(edges_uri)
    reason_names = (REASON_BLOCKLIST, REASON_SUPER_NODE)
    quarantine_written = Observation("identity_quarantine")
    quarantined.observe(
        quarantine_written,
        *[F.count(F.when(F.col("reason") == name, 1)).alias(name) for name in reason_names],
        F.count(F.when(F.col("revokes_edges"), 1)).alias("revoking"),
    ).coalesce(1).write.mode("overwrite").parquet(quarantine_uri)
    by_rule = {name: int(edges_written.get[name]) for name in rule_names}
    by_reason = {name: int(quarantine_written.get[name]) for name in reason_names}

    # Read back with the schema just written: inferring it would cost a Spark job.
    written_quarantine = spark.read.schema(quarantined.schema).parquet(quarantine_uri)
    top = [
        {
            "key_type": r["key_type"],
            "key": r["key"],
            "reason": r["reason"],
            "profiles": int(r["profiles"] or 0),
        }
        for r in written_quarantine.orderBy(F.desc("profiles"), "key_type", "key")
        .limit(10)
        .collect()
    ]
    present = alt_id_kinds_present(events)
    return EdgesSummary(
        profiles=int(profiles_written.get["rows"]),
        keys=keys.select("key_type", "key").distinct().count(),
        edges=sum(by_rule.values()),
        edges_by_rule={name: count for name, count in by_rule.items() if count},
        quarantined_keys=sum(by_reason.values()),
        quarantined_by_reason={name: count for name, count in by_reason.items() if count},
        revoking_keys=int(quarantine_written.get["revoking"]),
        top_quarantined=top,
        edges_uri=edges_uri,
        quarantine_uri=quarantine_uri,
        alt_id_kinds=present,
        non_bridging_alt_id_kinds={
            kind: present[kind] for kind in non_bridging_kinds(present, rules)
        },
    )


SUMMARY_FILE = "_summary.json"  # beside each assignment (Spark and Arrow skip "_" files)


def latest_assignment_dir(storage: LakeStorage) -> str | None:
    """The lake directory of the latest day's assignment, None before the first one."""
    if not storage.exists(IDENTITY_COMPONENTS_LATEST):
        return None
    return storage.read_bytes(IDENTITY_COMPONENTS_LATEST).decode().strip()


@dataclass(frozen=True)
class ComponentsUpdate:
    """One day's component update: how it ran, what it changed, and the result."""

    mode: str  # "incremental" | "full"
    change: DayChange
    summary: AssignmentSummary
    snapshot_uri: str
    latest_updated: bool
    profiles: int = 0  # every profile seen up to the day, linked or not

    @property
    def singletons(self) -> int:
        """Profiles of no link: absent from the assignment, each its own component (master)."""
        return self.profiles - self.summary.linked_profiles


def surviving_edges(
    spark: SparkSession, storage: LakeStorage, day: date, threshold: float
) -> DataFrame:
    """Edges up to the day with weight >= threshold and no key quarantined up to the day."""
    quarantined = (
        read_history(spark, storage, IDENTITY_QUARANTINE, QUARANTINE_KEYS_SCHEMA, day)
        .select("key_type", "key")
        .distinct()
    )
    edges = read_history(spark, storage, IDENTITY_EDGES, EDGES_SCHEMA, day).where(
        F.col("weight") >= threshold
    )
    surviving = edges.join(F.broadcast(quarantined), ["key_type", "key"], "left_anti")
    return surviving


def update_components(
    spark: SparkSession,
    storage: LakeStorage,
    day: date,
    threshold: float = 0.9,
    full_recompute: bool = False,
    max_iterations: int = 64,
) -> ComponentsUpdate:
    """Write the assignment after ``day`` (snapshot, and ``_LATEST`` when it is the latest day).

    Incremental from the snapshot of the day before when it exists; otherwise (or with
    ``full_recompute``) over every surviving edge up to the day.
    """
    if not 0.0 < threshold <= 1.0:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    surviving = surviving_edges(spark, storage, day, threshold)
    history_pairs = surviving.select("profile_a", "profile_b").distinct()
    profile_history = read_history(spark, storage, IDENTITY_PROFILES, PROFILES_SCHEMA, day)
    previous_dir = day_dir(IDENTITY_COMPONENTS, day - timedelta(days=1))
    incremental = not full_recompute and storage.exists(previous_dir)
    if not incremental:
        previous = None
        result = full_day(history_pairs, profiles_first_seen(profile_history), max_iterations)
    else:
        previous = spark.read.schema(ASSIGNMENT_SCHEMA).parquet(storage.spark_uri(previous_dir))
        # Small, and read by several steps: computed once.
        day_pairs = (
            surviving.where(F.col("date") == F.lit(day))
            .select("profile_a", "profile_b")
            .distinct()
            .localCheckpoint(eager=True)
        )
        revoked_keys = (
            read_history(
                spark,
                storage,
                IDENTITY_QUARANTINE,
                StructType(
                    [*QUARANTINE_KEYS_SCHEMA.fields, StructField("revokes_edges", BooleanType())]
                ),
                day,
                since=day,
            )
            .where("revokes_edges")
            .select("key_type", "key")
            .collect()
        )
        revoked_ends = None
        if revoked_keys:
            # Rare (a key crossing the super-node limit): only then is the edge history read.
            keys = spark.createDataFrame(revoked_keys, QUARANTINE_KEYS_SCHEMA)
            revoked = read_history(
                spark, storage, IDENTITY_EDGES, EDGES_SCHEMA, day - timedelta(days=1)
            ).join(F.broadcast(keys), ["key_type", "key"], "left_semi")
            revoked_ends = (
                revoked.select(F.col("profile_a").alias("profile"))
                .unionByName(revoked.select(F.col("profile_b").alias("profile")))
                .distinct()
            )
        # A linked profile's first_seen is in the state; apply_day reads the newcomers' only.
        first_seen = profile_history.select("profile", "first_seen")
        result = apply_day(
            previous, day_pairs, first_seen, revoked_ends, history_pairs, max_iterations
        )

    snapshot = day_dir(IDENTITY_COMPONENTS, day)
    snapshot_uri = storage.spark_uri(snapshot)
    result.assignment.write.mode("overwrite").parquet(snapshot_uri)
    written = spark.read.schema(ASSIGNMENT_SCHEMA).parquet(snapshot_uri)

    later = day_dir(IDENTITY_COMPONENTS, day + timedelta(days=1))
    latest_updated = not storage.exists(later)
    if latest_updated:
        storage.write_bytes(IDENTITY_COMPONENTS_LATEST, snapshot.encode())

    summary = None
    previous_summary = f"{previous_dir}/{SUMMARY_FILE}"
    if incremental and storage.exists(previous_summary):
        summary = summarize_day(
            AssignmentSummary.from_json(storage.read_bytes(previous_summary)), result
        )
    if summary is None:
        summary = summarize(written)
    storage.write_bytes(f"{snapshot}/{SUMMARY_FILE}", summary.to_json())

    change = day_change(result, datetime(day.year, day.month, day.day, tzinfo=UTC))
    return ComponentsUpdate(
        mode="incremental" if incremental else "full",
        change=change,
        summary=summary,
        snapshot_uri=snapshot_uri,
        latest_updated=latest_updated,
        profiles=profile_history.select("profile").distinct().count(),
    )
