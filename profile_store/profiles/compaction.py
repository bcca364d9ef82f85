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

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from profile_store.profiles.counters import decayed_sum

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


def changed_profiles(
    day_profiles: DataFrame, assignment: DataFrame, previous_assignment: DataFrame | None
) -> DataFrame:
    """Profiles whose row must be rewritten: new state, or a new master or component size."""
    changed = day_profiles.select("profile")
    if previous_assignment is None:
        return changed.unionByName(assignment.select("profile")).distinct()
    now = assignment.select("profile", "master", "size")
    before = previous_assignment.select(
        "profile", F.col("master").alias("old_master"), F.col("size").alias("old_size")
    )
    moved = (
        now.join(before, "profile", "full")
        .where(
            ~F.col("master").eqNullSafe(F.col("old_master"))
            | ~F.col("size").eqNullSafe(F.col("old_size"))
        )
        .select("profile")
    )
    return changed.unionByName(moved).distinct()


def members_to_rewrite(changed: DataFrame, assignment: DataFrame) -> DataFrame:
    """(profile, master, devices) of every profile in a component that holds a changed one.

    A profile outside ``assignment`` has no link: it is its own master, alone.
    """
    linked = assignment.select("profile", "master", F.col("size").alias("devices"))
    masters = (
        changed.join(linked, "profile", "left")
        .select(F.coalesce("master", "profile").alias("master"))
        .distinct()
    )
    in_components = linked.join(masters, "master", "left_semi")
    alone = changed.join(linked, "profile", "left_anti").select(
        "profile", F.col("profile").alias("master"), F.lit(1).cast("long").alias("devices")
    )
    return in_components.unionByName(alone)


def compacted_rows(
    members: DataFrame,
    attributes: DataFrame,
    segments: DataFrame,
    counters: DataFrame,
    half_life_ms: int,
    as_of_ms: int,
    max_associations: int,
) -> DataFrame:
    """One row per member: the component's segments, counters and (capped) other ids.

    ``attributes``: (profile, id_type, first_seen_ms) of at least every member. ``segments`` and
    ``counters``: profile state. Associations are the component's oldest profiles first, at most
    ``max_associations`` of them besides the row's own id.
    """
    member_masters = members.select("profile", "master")
    component_segments = (
        segments.join(member_masters, "profile")
        .groupBy("master", "segment")
        .agg(F.max("expiry_ms").alias("expiry_ms"))
        .groupBy("master")
        .agg(F.map_from_entries(F.collect_list(F.struct("segment", "expiry_ms"))).alias("segments"))
    )
    merged_counters = decayed_sum(
        counters.join(member_masters, "profile").select("master", "event_type", "value", "last_ms"),
        ("master", "event_type"),
        half_life_ms,
        as_of_ms,
    )
    component_counters = merged_counters.groupBy("master").agg(
        F.map_from_entries(
            F.collect_list(F.struct("event_type", F.struct("value", "last_ms")))
        ).alias("counters")
    )
    described = members.join(attributes, "profile", "left")
    oldest = described.groupBy("master").agg(
        F.slice(
            F.array_sort(F.collect_list(F.struct("first_seen_ms", "profile", "id_type"))),
            1,
            max_associations + 1,
        ).alias("oldest")
    )
    rows = (
        described.join(component_segments, "master", "left")
        .join(component_counters, "master", "left")
        .join(oldest, "master", "left")
    )
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
