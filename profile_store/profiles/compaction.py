"""Profile compaction: every profile of a person carries the person's whole picture.

Two levels. The *profile state* (per profile id, kept in the lake) folds each day into the day
before: segment expiries (max wins; expired ones are dropped) and decaying counters. The
*compacted rows* merge the state of every profile of a component (the identity graph's
connected component, master = oldest profile) and give each member the same segments and
counters, plus its master, the component size and a capped list of the other ids.

Only components that changed are recomputed: those holding a profile whose state changed that
day, or whose membership changed (a merge, a split, a new link). Everything else in HBase is
already right.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from profile_store.profiles.counters import FLOOR, decayed_sum, value_as_of, value_at_last

SEGMENT_STATE_COLUMNS = ("profile", "segment", "expiry_ms")
COUNTER_STATE_COLUMNS = ("profile", "event_type", "value", "last_ms")
ROW_COLUMNS = (
    "profile",
    "master",
    "id_type",
    "first_seen_ms",
    "devices",
    "segments",
    "counters",
    "associations",
)


def next_segments(previous: DataFrame | None, hits: DataFrame, as_of_ms: int) -> DataFrame:
    """Segment state after a day: the max expiry per (profile, segment), still alive at as_of."""
    parts = hits.select(*SEGMENT_STATE_COLUMNS)
    if previous is not None:
        parts = previous.select(*SEGMENT_STATE_COLUMNS).unionByName(parts)
    return (
        parts.groupBy("profile", "segment")
        .agg(F.max("expiry_ms").alias("expiry_ms"))
        .where(F.col("expiry_ms") > F.lit(as_of_ms))
    )


def next_counters(
    previous: DataFrame | None, day: DataFrame, half_life_ms: int, as_of_ms: int
) -> DataFrame:
    """Counter state after a day: the previous counters merged with the day's."""
    parts = day.select(*COUNTER_STATE_COLUMNS)
    if previous is not None:
        parts = previous.select(*COUNTER_STATE_COLUMNS).unionByName(parts)
    return decayed_sum(parts, ("profile", "event_type"), half_life_ms, as_of_ms)


def members_to_rewrite(
    touched: DataFrame,
    assignment: DataFrame,
    before: DataFrame | None = None,
    *,
    every_component: bool = False,
) -> DataFrame:
    """(profile, master, devices, changed) of every profile in a component that holds a
    changed one, in one query of two shuffles (by profile, then by component).

    A profile is changed when it is in ``touched`` (its state changed), when its master or its
    component size differs from ``before`` (the assignment the table's rows were written from;
    a profile in only one of the two differs), or with ``every_component`` when it is in
    ``assignment`` at all. A profile outside ``assignment`` has no link: it is its own master,
    alone.
    """
    parts = [
        touched.select("profile", F.lit(True).alias("touched")),
        assignment.select("profile", "master", "size"),
    ]
    if before is not None:
        parts.append(
            before.select(
                "profile",
                F.col("master").alias("old_master"),
                F.col("size").alias("old_size"),
            )
        )
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part, allowMissingColumns=True)
    profiles = union.groupBy("profile").agg(
        *(F.max(name).alias(name) for name in union.columns if name != "profile")
    )
    changed = F.coalesce(F.col("touched"), F.lit(False))
    if every_component:
        changed = changed | F.col("master").isNotNull()
    if before is not None:
        changed = (
            changed
            | ~F.col("master").eqNullSafe(F.col("old_master"))
            | ~F.col("size").eqNullSafe(F.col("old_size"))
        )
    # A linked profile is rewritten with its component; one outside ``assignment`` alone.
    in_changed_component = F.max("changed").over(Window.partitionBy("master"))
    return (
        profiles.select(
            "profile",
            F.coalesce("master", "profile").alias("master"),
            F.col("size").alias("devices"),
            changed.alias("changed"),
        )
        .withColumn(
            "rewritten",
            F.when(F.col("devices").isNotNull(), in_changed_component).otherwise(F.col("changed")),
        )
        .where("rewritten")
        .select(
            "profile",
            "master",
            F.coalesce("devices", F.lit(1).cast("long")).alias("devices"),
            "changed",
        )
    )


def compacted_rows(
    members: DataFrame,
    profile_history: DataFrame,
    segments: DataFrame,
    counters: DataFrame,
    half_life_ms: int,
    as_of_ms: int,
    max_associations: int,
) -> DataFrame:
    """One row per member: the component's segments, counters and (capped) other ids.

    ``profile_history``: (profile, id_type, first_seen) rows of the identity graph's profiles,
    a member's id type being the one it was first seen with. ``segments`` and ``counters``:
    profile state. Associations are the component's oldest profiles first, at most
    ``max_associations`` of them besides the row's own id.

    One shuffle: the members and their state, each joined with the members' masters, are
    partitioned by master together; each (master, part, key) is merged (a member's attributes,
    a segment's latest expiry, an event type's decayed counter), then each master's merged
    parts become its members' rows, with no other exchange.
    """
    masters = members.select("profile", "master")

    def part(name: str, frame: DataFrame, key: str, *columns: str) -> DataFrame:
        return frame.select("master", F.lit(name).alias("part"), F.col(key).alias("key"), *columns)

    parts = part("profile", members, "profile", "devices")
    for frame in (
        part(
            "profile", profile_history.join(masters, "profile"), "profile", "id_type", "first_seen"
        ),
        part("segment", segments.join(masters, "profile"), "segment", "expiry_ms"),
        part("counter", counters.join(masters, "profile"), "event_type", "value", "last_ms"),
    ):
        parts = parts.unionByName(frame, allowMissingColumns=True)
    merged = (
        parts.repartition("master")
        .groupBy("master", "part", "key")
        .agg(
            F.max("devices").alias("devices"),
            F.unix_millis(F.min("first_seen")).alias("first_seen_ms"),
            F.min_by("id_type", "first_seen").alias("id_type"),
            F.max("expiry_ms").alias("expiry_ms"),
            value_as_of(half_life_ms, as_of_ms).alias("value_as_of"),
            F.max("last_ms").alias("last_ms"),
        )
    )

    def entries(name: str, entry: Column, where: Column | None = None) -> Column:
        """The master's merged parts ``name`` as a list of ``entry`` (nulls are not kept)."""
        kept = F.col("part") == name if where is None else (F.col("part") == name) & where
        return F.collect_list(F.when(kept, entry))

    profile = F.struct(
        F.col("key").alias("profile"),
        "devices",
        "first_seen_ms",
        F.col("id_type"),
    )
    counter = F.struct(
        value_at_last("value_as_of", "last_ms", half_life_ms, as_of_ms).alias("value"),
        "last_ms",
    )
    components = merged.groupBy("master").agg(
        entries("profile", profile).alias("members"),
        F.slice(
            F.array_sort(
                entries(
                    "profile", F.struct("first_seen_ms", F.col("key").alias("profile"), "id_type")
                )
            ),
            1,
            max_associations + 1,
        ).alias("oldest"),
        F.map_from_entries(entries("segment", F.struct("key", "expiry_ms"))).alias("segments"),
        F.map_from_entries(
            entries("counter", F.struct("key", counter), F.col("value_as_of") >= F.lit(FLOOR))
        ).alias("counters"),
    )
    rows = components.select(
        "master",
        F.explode("members").alias("member"),
        "oldest",
        "segments",
        # As a component without counters had none before: no map, not an empty one.
        F.when(F.size("counters") > 0, F.col("counters")).alias("counters"),
    ).select("member.*", "master", "oldest", "segments", "counters")
    others = F.slice(
        F.filter("oldest", lambda other: other["profile"] != F.col("profile")),
        1,
        max_associations,
    )
    return rows.select(
        "profile",
        "master",
        F.coalesce("id_type", F.lit("")).alias("id_type"),
        F.coalesce("first_seen_ms", F.lit(0)).alias("first_seen_ms"),
        "devices",
        F.coalesce("segments", F.create_map().cast("map<string,bigint>")).alias("segments"),
        "counters",
        F.transform(
            others, lambda other: F.struct(other["profile"].alias("profile"), other["id_type"])
        ).alias("associations"),
    )
