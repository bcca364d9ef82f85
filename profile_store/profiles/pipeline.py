"""One day of profile compaction over the lake and the ``profiles`` HBase table.

Reads the day's events, the segment feed, the members of activated audiences, the unsynced
``u:`` cells and the identity graph after the day; folds the day into the profile state
(``profile_segments``, ``profile_counters``);
rewrites in HBase the rows of every component that changed, its edge rows and the lookup rows
of its bridging keys; then deletes the live profile job's cells of the day and before, which
the rows now count. Incremental from the day before's state when it exists; otherwise (or
with ``full_recompute``) from every event up to the day.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import PurePosixPath

from pyspark.sql import DataFrame, Observation, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.hbase.settings import ThriftAddress
from profile_store.identity.pipeline import (
    ASSIGNMENT_SCHEMA,
    EDGES_SCHEMA,
    KEYS_SCHEMA,
    PROFILES_SCHEMA,
    QUARANTINE_KEYS_SCHEMA,
    read_history,
    surviving_edges,
)
from profile_store.identity.rules import FUZZY_IP_UA
from profile_store.lake.layout import (
    AUDIENCE_ACTIVATIONS,
    COMPACTED_PROFILES,
    EVENTS,
    IDENTITY_COMPONENTS,
    IDENTITY_EDGES,
    IDENTITY_KEYS,
    IDENTITY_PROFILES,
    IDENTITY_QUARANTINE,
    PROFILE_COUNTERS,
    PROFILE_SEGMENTS,
    PROFILE_UNSYNCED,
    SEGMENT_FEED,
    day_dir,
    events_day,
)
from profile_store.lake.storage import LakeStorage
from profile_store.profiles.bulk_profiles import bulk_replace_profiles
from profile_store.profiles.compaction import (
    compacted_rows,
    members_to_rewrite,
    next_counters,
    next_segments,
)
from profile_store.profiles.counters import event_counters
from profile_store.profiles.live_cells import delete_superseded
from profile_store.profiles.profile_writer import (
    delete_edges,
    write_edges,
    write_lookups,
    write_profiles,
)
from profile_store.profiles.segment_feed import read_segment_feed
from profile_store.profiles.segment_rules import DAY_MS, SegmentRule, segment_hits
from profile_store.profiles.table import PROFILE_TABLE
from profile_store.profiles.unsynced import UNSYNCED_COLUMNS, delete_consumed, read_unsynced
from profile_store.suppression.salted_digests import Suppression, digest_column

SEGMENTS_SCHEMA = StructType(
    [
        StructField("profile", StringType()),
        StructField("segment", StringType()),
        StructField("expiry_ms", LongType()),
    ]
)
ACTIVATIONS_SCHEMA = StructType(
    [
        *SEGMENTS_SCHEMA.fields,
        StructField("tenant", StringType()),
        StructField("audience_id", StringType()),
    ]
)
COUNTERS_SCHEMA = StructType(
    [
        StructField("profile", StringType()),
        StructField("event_type", StringType()),
        StructField("value", DoubleType()),
        StructField("last_ms", LongType()),
    ]
)
REVOKES_SCHEMA = StructType(
    [*QUARANTINE_KEYS_SCHEMA.fields, StructField("revokes_edges", BooleanType())]
)


PROFILE_WRITES = ("auto", "bulk", "thrift")
BULK_MIN_ROWS = 5_000


@dataclass(frozen=True)
class CompactionSettings:
    rules: tuple[SegmentRule, ...]
    half_life_days: float = 7.0
    max_associations: int = 100
    weight_threshold: float = 0.9
    full_recompute: bool = False
    table_name: str = PROFILE_TABLE
    profile_write: str = "auto"
    """How profile rows reach the store: ``bulk`` (cell files the embedded gateway's store
    adopts, ``bulk_profiles``), ``thrift`` (puts from the executors) or ``auto`` (bulk from
    ``bulk_min_rows`` rows on when the store is the embedded gateway's)."""
    bulk_min_rows: int = BULK_MIN_ROWS

    def __post_init__(self) -> None:
        if self.profile_write not in PROFILE_WRITES:
            raise ValueError(
                f"profile_write must be one of {', '.join(PROFILE_WRITES)}, "
                f"got {self.profile_write!r}"
            )
        if self.bulk_min_rows < 0:
            raise ValueError(f"bulk_min_rows must be >= 0, got {self.bulk_min_rows}")
        if not 0 < self.half_life_days <= 3650:
            raise ValueError(f"half_life_days must be in (0, 3650], got {self.half_life_days}")
        if self.max_associations < 0:
            raise ValueError(f"max_associations must be >= 0, got {self.max_associations}")

    @property
    def half_life_ms(self) -> int:
        return int(round(self.half_life_days * DAY_MS))

    def write_path(self, store_dir: str | None, rows: int) -> str:
        """``bulk`` or ``thrift`` for ``rows`` profile rows; ``store_dir``: the embedded
        gateway's store, None when HBase is a Thrift server (no bulk path there)."""
        if self.profile_write == "thrift":
            return "thrift"
        if store_dir is None:
            if self.profile_write == "bulk":
                raise ValueError(
                    "profile_write 'bulk' needs the embedded gateway's store (HBASE_THRIFT_HOST "
                    "unset); against an HBase Thrift server the rows are written by puts: use "
                    "'auto' or 'thrift'"
                )
            return "thrift"
        if self.profile_write == "bulk" or rows >= self.bulk_min_rows:
            return "bulk"
        return "thrift"


@dataclass(frozen=True)
class CompactionSummary:
    mode: str  # "incremental" | "full"
    write_path: str  # "bulk" | "thrift"
    profiles_changed: int
    rows_written: int
    components_rewritten: int
    stale_cells_removed: int
    edges_written: int
    edges_withdrawn: int
    lookups_written: int
    unsynced_consumed: int
    live_cells_superseded: int
    profiles_with_segments: int
    segment_members: dict[str, int] = field(default_factory=dict)


def _prefixed(address: ThriftAddress, table_name: str) -> str:
    """The table's name in the store: happybase's ``table_prefix`` joined with ``_``."""
    return f"{address.table_prefix}_{table_name}" if address.table_prefix else table_name


def end_of_day_ms(day: date) -> int:
    """The as-of time of a day's compaction: the next midnight UTC, in epoch ms."""
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)
    return int(midnight.timestamp() * 1000)


def _overwrite(
    frame: DataFrame, storage: LakeStorage, relative: str, schema: StructType | str
) -> DataFrame:
    uri = storage.spark_uri(relative)
    frame.write.mode("overwrite").parquet(uri)
    return frame.sparkSession.read.schema(schema).parquet(uri)


def segment_counts(segments: DataFrame) -> tuple[dict[str, int], int]:
    """Members per segment and profiles with any segment, in one query over the state
    (``segments``: one row per profile and segment)."""
    rows = (
        segments.groupingSets([["segment"], []], "segment")
        .agg(
            F.grouping("segment").alias("total"),
            F.count(F.lit(1)).alias("members"),
            F.countDistinct("profile").alias("profiles"),
        )
        .collect()
    )
    members = {row["segment"]: int(row["members"]) for row in rows if not row["total"]}
    return members, sum(int(row["profiles"]) for row in rows if row["total"])


def _consume_unsynced(
    spark: SparkSession, storage: LakeStorage, day: date, cells: list
) -> DataFrame:
    """Persist the scanned ``u:`` cells to the day's lake area (kept across re-runs)."""
    area = day_dir(PROFILE_UNSYNCED, day)
    rows = [(profile, segment, expiry) for profile, segment, expiry, _ in cells]
    if storage.exists(area):
        earlier = spark.read.schema(SEGMENTS_SCHEMA).parquet(storage.spark_uri(area)).collect()
        rows += [tuple(row) for row in earlier]
    frame = spark.createDataFrame(rows, SEGMENTS_SCHEMA).select(*UNSYNCED_COLUMNS)
    frame.coalesce(1).write.mode("overwrite").parquet(storage.spark_uri(area))
    return spark.read.schema(SEGMENTS_SCHEMA).parquet(storage.spark_uri(area))


def _feed_history(spark: SparkSession, storage: LakeStorage, day: date) -> DataFrame:
    """Every feed day up to ``day`` (for a full recompute), validated day by day."""
    frames = [spark.createDataFrame([], SEGMENTS_SCHEMA)]
    if storage.exists(SEGMENT_FEED):
        folders = {PurePosixPath(f.path).parts[1] for f in storage.list_files(SEGMENT_FEED)}
        for folder in sorted(folders):
            feed_day = date.fromisoformat(folder.removeprefix("date="))
            if feed_day <= day:
                frames.append(read_segment_feed(spark, storage, feed_day))
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def _activations(
    spark: SparkSession, storage: LakeStorage, day: date, since: date | None = None
) -> DataFrame:
    """Segment memberships of activated saved audiences (``audience_activations``), up to
    ``day``: folded in like the segment feed."""
    history = read_history(spark, storage, AUDIENCE_ACTIVATIONS, ACTIVATIONS_SCHEMA, day, since)
    return history.select(*SEGMENTS_SCHEMA.fieldNames())


def _observed_sizes(members: DataFrame, observation: Observation) -> DataFrame:
    """``members`` observing its rows and components (distinct masters) as it is computed:
    no query of its own for either figure."""
    first = F.row_number().over(Window.partitionBy("master").orderBy("profile")) == 1
    return (
        members.withColumn("first_of_component", first)
        .observe(
            observation,
            F.count(F.lit(1)).alias("rows"),
            F.count(F.when(F.col("first_of_component"), 1)).alias("components"),
        )
        .drop("first_of_component")
    )


def _component_edges(edges: DataFrame, members: DataFrame) -> DataFrame:
    """Edge rows of the rewritten components (an edge never crosses two components)."""
    return (
        edges.join(members.select(F.col("profile").alias("profile_a")), "profile_a", "left_semi")
        .groupBy("profile_a", "profile_b")
        .agg(
            F.max("weight").alias("weight"),
            F.array_sort(F.collect_set("rule")).alias("rules"),
            F.unix_millis(F.min("first_seen")).alias("first_seen_ms"),
        )
    )


def _lookups(
    key_history: DataFrame, quarantined: DataFrame, members: DataFrame, day_quarantine: DataFrame
) -> DataFrame:
    """Lookup rows of the members' clean keys -> master of the key's most recent profile, and
    (with a null master) deletions for keys quarantined today."""
    addressable = (F.col("key_type") != F.lit(FUZZY_IP_UA)) & (F.length("key") > 0)
    clean = (
        key_history.where(addressable)
        .join(members.select("profile", "master"), "profile")
        .join(quarantined, ["key_type", "key"], "left_anti")
    )
    puts = clean.groupBy("key_type", "key").agg(
        F.max_by("master", F.struct("last_seen", "profile")).alias("master")
    )
    deletes = (
        day_quarantine.where(addressable)
        .select("key_type", "key", F.lit(None).cast("string").alias("master"))
        .distinct()
    )
    return puts.unionByName(deletes)


def _withdrawn_pairs(
    spark: SparkSession, storage: LakeStorage, day: date, surviving: DataFrame
) -> list[tuple[str, str]]:
    """Pairs whose only edges came from keys that became super-nodes today."""
    revoking = (
        read_history(spark, storage, IDENTITY_QUARANTINE, REVOKES_SCHEMA, day, since=day)
        .where("revokes_edges")
        .select("key_type", "key")
    )
    if revoking.isEmpty():
        return []
    edges = read_history(spark, storage, IDENTITY_EDGES, EDGES_SCHEMA, day)
    revoked = edges.join(F.broadcast(revoking), ["key_type", "key"], "left_semi")
    pairs = revoked.select("profile_a", "profile_b").distinct()
    gone = pairs.join(
        surviving.select("profile_a", "profile_b"), ["profile_a", "profile_b"], "left_anti"
    )
    return [(row.profile_a, row.profile_b) for row in gone.collect()]


def _not_suppressed(
    frame: DataFrame, suppression: Suppression, columns: tuple[str, ...] = ("profile",)
) -> DataFrame:
    """Without the rows of forgotten profiles: until the erasure step has taken them out of
    the lake, a compaction must not write them back to HBase."""
    if not suppression.digests:
        return frame
    listed = sorted(suppression.digests)
    for name in columns:
        frame = frame.where(~digest_column(suppression.salt, F.col(name)).isin(listed))
    return frame


def rewrite_components(
    spark: SparkSession,
    storage: LakeStorage,
    address: ThriftAddress,
    day: date,
    profiles: list[str],
    settings: CompactionSettings,
) -> int:
    """Rewrite in HBase the rows of the components that hold ``profiles`` after ``day``, from
    the day's profile state, with their edge and lookup rows; returns the rows written.

    The erasure step's way of giving the others of a forgotten person's component their own
    picture again (split components, new masters, without the person's segments and counters).
    """
    if not profiles:
        return 0
    as_of = end_of_day_ms(day)
    assignment = spark.read.schema(ASSIGNMENT_SCHEMA).parquet(
        storage.spark_uri(day_dir(IDENTITY_COMPONENTS, day))
    )
    changed = spark.createDataFrame([(p,) for p in sorted(profiles)], "profile string")
    members = members_to_rewrite(changed, assignment).localCheckpoint(eager=True)
    segments = spark.read.schema(SEGMENTS_SCHEMA).parquet(
        storage.spark_uri(day_dir(PROFILE_SEGMENTS, day))
    )
    counters = spark.read.schema(COUNTERS_SCHEMA).parquet(
        storage.spark_uri(day_dir(PROFILE_COUNTERS, day))
    )
    profile_history = read_history(spark, storage, IDENTITY_PROFILES, PROFILES_SCHEMA, day)
    rows = compacted_rows(
        members,
        profile_history,
        segments,
        counters,
        settings.half_life_ms,
        as_of,
        settings.max_associations,
    ).localCheckpoint(eager=True)
    written, _ = write_profiles(rows, address, settings.table_name, settings.half_life_ms, as_of)
    surviving = surviving_edges(spark, storage, day, settings.weight_threshold)
    write_edges(_component_edges(surviving, members), address, settings.table_name)
    quarantined = (
        read_history(spark, storage, IDENTITY_QUARANTINE, QUARANTINE_KEYS_SCHEMA, day)
        .select("key_type", "key")
        .distinct()
    )
    no_deletes = spark.createDataFrame([], QUARANTINE_KEYS_SCHEMA)
    key_history = read_history(spark, storage, IDENTITY_KEYS, KEYS_SCHEMA, day)
    write_lookups(
        _lookups(key_history, quarantined, members, no_deletes), address, settings.table_name
    )
    return written


def compact_day(
    spark: SparkSession,
    storage: LakeStorage,
    open_table: Callable[[], AbstractContextManager],
    address: ThriftAddress,
    day: date,
    settings: CompactionSettings,
    store_dir: str | None = None,
) -> CompactionSummary:
    """Fold ``day`` into the profile state and rewrite the changed components in HBase.

    ``open_table()``: a context manager yielding the happybase ``profiles`` table, which must
    exist (``table.ensure_table``), for the driver's reads and deletes; ``address``: where
    executors write; ``store_dir``: the embedded gateway's store, which profile rows may be
    loaded into in bulk (``settings.write_path``). Requires the day's identity components.
    """
    assignment_dir = day_dir(IDENTITY_COMPONENTS, day)
    if not storage.exists(assignment_dir):
        raise FileNotFoundError(
            f"{assignment_dir}: identity_components for {day} is not materialized yet"
        )
    as_of = end_of_day_ms(day)
    h = settings.half_life_ms
    previous_day = day - timedelta(days=1)
    previous_segments = day_dir(PROFILE_SEGMENTS, previous_day)
    previous_counters = day_dir(PROFILE_COUNTERS, previous_day)
    incremental = (
        not settings.full_recompute
        and storage.exists(previous_segments)
        and storage.exists(previous_counters)
    )

    with open_table() as table:
        cells = read_unsynced(table)
    unsynced = _consume_unsynced(spark, storage, day, cells)
    profile_history = read_history(spark, storage, IDENTITY_PROFILES, PROFILES_SCHEMA, day)
    if incremental:
        events = spark.read.schema(EVENTS_SCHEMA).parquet(storage.spark_uri(events_day(day)))
        feed = read_segment_feed(spark, storage, day).unionByName(
            _activations(spark, storage, day, since=day)
        )
        hits = segment_hits(events, settings.rules).unionByName(feed).unionByName(unsynced)
        segments = next_segments(
            spark.read.schema(SEGMENTS_SCHEMA).parquet(storage.spark_uri(previous_segments)),
            hits,
            as_of,
        )
        counters = next_counters(
            spark.read.schema(COUNTERS_SCHEMA).parquet(storage.spark_uri(previous_counters)),
            event_counters(events, h, as_of),
            h,
            as_of,
        )
        day_profiles = (
            events.select(F.col("user_id").alias("profile"))
            .unionByName(feed.select("profile"))
            .unionByName(unsynced.select("profile"))
        )
        previous_assignment_dir = day_dir(IDENTITY_COMPONENTS, previous_day)
        previous_assignment = (
            spark.read.schema(ASSIGNMENT_SCHEMA).parquet(storage.spark_uri(previous_assignment_dir))
            if storage.exists(previous_assignment_dir)
            else None
        )
    else:
        events = read_history(spark, storage, EVENTS, EVENTS_SCHEMA, day)
        unsynced_history = read_history(
            spark, storage, PROFILE_UNSYNCED, SEGMENTS_SCHEMA, day
        ).select(*UNSYNCED_COLUMNS)
        feed = _feed_history(spark, storage, day).unionByName(_activations(spark, storage, day))
        hits = segment_hits(events, settings.rules).unionByName(feed).unionByName(unsynced_history)
        segments = next_segments(None, hits, as_of)
        counters = event_counters(events, h, as_of)
        day_profiles = profile_history.select("profile").unionByName(feed.select("profile"))
        previous_assignment = None

    segments = _overwrite(segments, storage, day_dir(PROFILE_SEGMENTS, day), SEGMENTS_SCHEMA)
    counters = _overwrite(counters, storage, day_dir(PROFILE_COUNTERS, day), COUNTERS_SCHEMA)
    assignment = spark.read.schema(ASSIGNMENT_SCHEMA).parquet(storage.spark_uri(assignment_dir))

    suppression = Suppression.load(storage)
    # The figures the summary reports are observed while the members are computed, in the
    # same query: profiles changed before the suppression, rows and components after it.
    changes, sizes = Observation("changes"), Observation("sizes")
    members = members_to_rewrite(
        day_profiles, assignment, previous_assignment, every_component=previous_assignment is None
    ).observe(changes, F.count(F.when(F.col("changed"), 1)).alias("profiles"))
    members = _observed_sizes(_not_suppressed(members, suppression), sizes)
    members = members.localCheckpoint(eager=True)
    rows = compacted_rows(
        members,
        profile_history,
        segments,
        counters,
        h,
        as_of,
        settings.max_associations,
    )
    # Computed once, streaming into the writers: rows is one row per member, so the day's
    # compacted_profiles output below is members', with no need to keep rows around.
    write_path = settings.write_path(store_dir, int(sizes.get["rows"]))
    # One timestamp for every put and delete of the rows, on either path: a retried batch
    # writes the same versions, and both paths leave the same table.
    timestamp = int(time.time() * 1000)
    if write_path == "bulk" and store_dir is not None:
        written, stale = bulk_replace_profiles(
            rows, store_dir, _prefixed(address, settings.table_name), h, as_of, timestamp
        )
    else:
        written, stale = write_profiles(rows, address, settings.table_name, h, as_of, timestamp)

    surviving = _not_suppressed(
        surviving_edges(spark, storage, day, settings.weight_threshold),
        suppression,
        ("profile_a", "profile_b"),
    )
    edges_written = write_edges(_component_edges(surviving, members), address, settings.table_name)
    withdrawn = _withdrawn_pairs(spark, storage, day, surviving)
    quarantined = (
        read_history(spark, storage, IDENTITY_QUARANTINE, QUARANTINE_KEYS_SCHEMA, day)
        .select("key_type", "key")
        .distinct()
    )
    day_quarantine = read_history(
        spark, storage, IDENTITY_QUARANTINE, QUARANTINE_KEYS_SCHEMA, day, since=day
    )
    key_history = read_history(spark, storage, IDENTITY_KEYS, KEYS_SCHEMA, day)
    lookups_written = write_lookups(
        _lookups(key_history, quarantined, members, day_quarantine),
        address,
        settings.table_name,
    )
    members.select("profile", "master").write.mode("overwrite").parquet(
        storage.spark_uri(day_dir(COMPACTED_PROFILES, day))
    )
    with open_table() as table:
        withdrawn_count = delete_edges(table, withdrawn)
        consumed = delete_consumed(table, cells)
        # Every row now counts the day's events: the live job's cells of the day and before
        # go (reads already ignored them on the rewritten rows, by s:as_of).
        live_superseded = delete_superseded(table, day)

    members_by_segment, with_segments = segment_counts(segments)
    return CompactionSummary(
        mode="incremental" if incremental else "full",
        write_path=write_path,
        profiles_changed=int(changes.get["profiles"]),
        rows_written=written,
        components_rewritten=int(sizes.get["components"]),
        stale_cells_removed=stale,
        edges_written=edges_written,
        edges_withdrawn=withdrawn_count,
        lookups_written=lookups_written,
        unsynced_consumed=consumed,
        live_cells_superseded=live_superseded,
        profiles_with_segments=with_segments,
        segment_members=dict(sorted(members_by_segment.items())),
    )
