"""Apply one day's edges to the previous assignment, recomputing only what they touch.

State: the assignment profile -> (master, first_seen, size) of every profile with at least one
edge (a profile absent from it is its own master). For a new day:

1. links: the day's pairs whose ends are not already in one previous component (a login used
   again links nothing new); seeds: their ends, plus the ends of earlier edges whose key the
   day revoked (a key that became a super-node: its old edges are withdrawn);
2. touched: every profile of a previous component that holds a seed, plus the seeds;
3. connected components of (the links + each touched previous component as a star profile ->
   master, which has the same connectivity as its edges; a component a revoked key touched is
   rebuilt from its surviving edges instead, so it can split);
4. the new assignment: the previous one minus the touched profiles, plus step 3's answer.

Untouched components keep their rows byte for byte. A component's master changes only when it
merges with an older one (masters are the oldest profile, and a new profile is never older
than the ones already seen) or when a revoked key splits it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from profile_store.identity.components import ASSIGNMENT_COLUMNS, profile_components

SIZE_BUCKETS = ((2, 2), (3, 3), (4, 4), (5, 5), (6, 10), (11, 50), (51, None))


@dataclass(frozen=True)
class DayChange:
    """What one day did to the components (counted over the recomputed part only)."""

    profiles_touched: int
    edges_recomputed: int
    iterations: int
    merges: int  # previous components absorbed into another one
    splits: int  # extra pieces from previous components split by revoked keys
    new_components: int  # components without any previously linked profile


@dataclass(frozen=True)
class AssignmentSummary:
    """The whole assignment after the day."""

    components: int
    linked_profiles: int
    largest_size: int
    largest_master: str | None
    size_histogram: dict[str, int]


@dataclass
class DayResult:
    """The new assignment, the recomputed part (checkpointed) and the components run."""

    assignment: DataFrame
    recomputed: DataFrame
    touched: DataFrame | None  # profiles whose rows were recomputed (None: all of them)
    iterations: int
    edges: int


def full_day(pairs: DataFrame, first_seen: DataFrame, max_iterations: int = 64) -> DayResult:
    """The assignment from every surviving edge (``profile_a``, ``profile_b``) up to the day."""
    recomputed, run = profile_components(pairs, first_seen, max_iterations)
    recomputed = recomputed.localCheckpoint(eager=True)
    return DayResult(recomputed, recomputed, None, run.iterations, run.edges)


def _ends(pairs: DataFrame) -> DataFrame:
    return (
        pairs.select(F.col("profile_a").alias("profile"))
        .unionByName(pairs.select(F.col("profile_b").alias("profile")))
        .distinct()
    )


def new_links(previous: DataFrame, day_pairs: DataFrame) -> DataFrame:
    """The day's pairs that are not already inside one previous component."""
    masters = previous.select("profile", "master")
    ends = F.broadcast(_ends(day_pairs))
    known = masters.join(ends, "profile", "left_semi")
    return (
        day_pairs.join(known.toDF("profile_a", "master_a"), "profile_a", "left")
        .join(known.toDF("profile_b", "master_b"), "profile_b", "left")
        .where(F.col("master_a").isNull() | ~F.col("master_a").eqNullSafe(F.col("master_b")))
        .select("profile_a", "profile_b")
    )


def apply_day(
    previous: DataFrame,
    day_pairs: DataFrame,
    first_seen: DataFrame,
    revoked_ends: DataFrame | None = None,
    history_pairs: DataFrame | None = None,
    max_iterations: int = 64,
) -> DayResult:
    """The assignment after applying one day's pairs to the previous assignment.

    A previous component enters the computation as a star (profile -> master), which has the
    same connectivity as its edges, so the history of edges is not read at all, except for
    the components a revoked key touches (``revoked_ends``: ends of earlier edges whose key
    became a super-node today): those are rebuilt from their surviving edges
    (``history_pairs``), which may split them. ``first_seen``: (profile, first_seen) of at
    least every recomputed profile. The recomputed part is checkpointed so that writing and
    summarising it do not run the components twice.
    """
    links = new_links(previous, day_pairs).localCheckpoint(eager=True)
    seeds = _ends(links)
    rebuilt_masters = None
    if revoked_ends is not None:
        rebuilt_masters = previous.join(F.broadcast(revoked_ends), "profile", "left_semi").select(
            "master"
        )
        seeds = seeds.unionByName(revoked_ends.select("profile")).distinct()
    # The day's side is small next to the state: broadcast it, never shuffle the state.
    touched_masters = (
        previous.join(F.broadcast(seeds), "profile", "left_semi")
        .select("master")
        .distinct()
        .localCheckpoint(eager=True)
    )
    stars = previous.join(F.broadcast(touched_masters), "master", "left_semi")
    touched = stars.select("profile").unionByName(seeds).distinct().localCheckpoint(eager=True)
    pairs = links
    if rebuilt_masters is not None and history_pairs is not None:
        rebuilt = previous.join(
            F.broadcast(rebuilt_masters.distinct()), "master", "left_semi"
        ).select("profile")
        stars = stars.join(rebuilt, "profile", "left_anti")
        # An edge never crosses components: one end among the rebuilt brings the whole edge.
        pairs = pairs.unionByName(
            history_pairs.join(rebuilt.toDF("profile_a"), "profile_a", "left_semi")
        )
    pairs = pairs.unionByName(
        stars.where(F.col("profile") != F.col("master")).select(
            F.col("profile").alias("profile_a"), F.col("master").alias("profile_b")
        )
    )
    recomputed, run = profile_components(pairs, first_seen, max_iterations)
    recomputed = recomputed.localCheckpoint(eager=True)
    kept = previous.join(F.broadcast(touched), "profile", "left_anti").select(*ASSIGNMENT_COLUMNS)
    assignment = kept.unionByName(recomputed.select(*ASSIGNMENT_COLUMNS))
    return DayResult(assignment, recomputed, touched, run.iterations, run.edges)


def day_change(previous: DataFrame | None, result: DayResult) -> DayChange:
    """Merges, splits and new components caused by the day, from the recomputed part."""
    if previous is None or result.touched is None:
        components = result.recomputed.select("master").distinct().count()
        return DayChange(
            result.recomputed.count(), result.edges, result.iterations, 0, 0, components
        )
    before = previous.join(F.broadcast(result.touched), "profile", "left_semi").select(
        "profile", F.col("master").alias("old_master")
    )
    joined = result.recomputed.select("profile", "master").join(before, "profile", "full")
    per_new = (
        joined.where(F.col("master").isNotNull())
        .groupBy("master")
        .agg(F.countDistinct("old_master").alias("olds"))
    )
    per_old = (
        joined.where(F.col("old_master").isNotNull())
        .groupBy("old_master")
        .agg(
            F.countDistinct("master").alias("news"),
            F.sum(F.col("master").isNull().cast("int")).alias("dropped"),
        )
    )
    new_side = per_new.agg(
        F.coalesce(F.sum(F.greatest(F.col("olds") - 1, F.lit(0))), F.lit(0)).alias("merges"),
        F.coalesce(F.sum((F.col("olds") == 0).cast("int")), F.lit(0)).alias("fresh"),
    ).first()
    old_side = per_old.agg(
        F.coalesce(
            F.sum(F.greatest(F.col("news") + F.col("dropped") - 1, F.lit(0))), F.lit(0)
        ).alias("splits")
    ).first()
    return DayChange(
        profiles_touched=result.touched.count(),
        edges_recomputed=result.edges,
        iterations=result.iterations,
        merges=int(new_side["merges"]),
        splits=int(old_side["splits"]),
        new_components=int(new_side["fresh"]),
    )


def summarize(assignment: DataFrame) -> AssignmentSummary:
    """Component count, linked profiles, size histogram and the largest component."""
    sizes = assignment.groupBy("master").agg(F.count(F.lit(1)).alias("size"))
    bucket = None
    for low, high in SIZE_BUCKETS:
        label = str(low) if low == high else (f"{low}+" if high is None else f"{low}-{high}")
        condition = F.col("size") >= low if high is None else F.col("size").between(low, high)
        bucket = (F if bucket is None else bucket).when(condition, F.lit(label))
    histogram_rows = sizes.groupBy(bucket.alias("bucket")).count().collect()
    found = {row["bucket"]: int(row["count"]) for row in histogram_rows}
    order = [
        str(low) if low == high else (f"{low}+" if high is None else f"{low}-{high}")
        for low, high in SIZE_BUCKETS
    ]
    largest = sizes.orderBy(F.desc("size"), "master").limit(1).collect()
    return AssignmentSummary(
        components=sum(found.values()),
        linked_profiles=int(sizes.agg(F.coalesce(F.sum("size"), F.lit(0))).first()[0]),
        largest_size=int(largest[0]["size"]) if largest else 0,
        largest_master=largest[0]["master"] if largest else None,
        size_histogram={label: found.get(label, 0) for label in order},
    )
