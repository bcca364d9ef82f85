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

import json
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F

from profile_store.identity.components import ASSIGNMENT_COLUMNS, profile_components

SIZE_BUCKETS = ((2, 2), (3, 3), (4, 4), (5, 5), (6, 10), (11, 50), (51, None))


@dataclass(frozen=True)
class DayChange:
    """What one day did to the components (counted over the recomputed part only)."""

    profiles_touched: int
    edges_recomputed: int
    iterations: int
    merges: int  # known persons (previous components or lone ids seen before) absorbed
    component_merges: int  # of which previous components with 2+ ids
    splits: int  # extra pieces from previous components split by revoked keys
    new_components: int  # components without any previously linked profile


@dataclass(frozen=True)
class AssignmentSummary:
    """The whole assignment after the day: components counted by exact size, the largest.

    Kept beside each day's assignment (``to_json``) so that the next day only adds and
    removes the components it touched instead of recounting every one.
    """

    components_by_size: dict[int, int]
    largest_size: int
    largest_master: str | None

    @property
    def components(self) -> int:
        return sum(self.components_by_size.values())

    @property
    def linked_profiles(self) -> int:
        return sum(size * count for size, count in self.components_by_size.items())

    @property
    def size_histogram(self) -> dict[str, int]:
        histogram = {_bucket_label(low, high): 0 for low, high in SIZE_BUCKETS}
        for size, count in self.components_by_size.items():
            for low, high in SIZE_BUCKETS:
                if size >= low and (high is None or size <= high):
                    histogram[_bucket_label(low, high)] += count
                    break
        return histogram

    def to_json(self) -> bytes:
        return json.dumps(
            {
                "components_by_size": {str(k): v for k, v in self.components_by_size.items()},
                "largest_size": self.largest_size,
                "largest_master": self.largest_master,
            },
            sort_keys=True,
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> AssignmentSummary:
        raw = json.loads(data)
        return cls(
            {int(k): int(v) for k, v in raw["components_by_size"].items()},
            int(raw["largest_size"]),
            raw["largest_master"],
        )


@dataclass
class DayResult:
    """The new assignment, the recomputed part (checkpointed) and the components run."""

    assignment: DataFrame
    recomputed: DataFrame
    touched: DataFrame | None  # profiles whose rows were recomputed (None: all of them)
    before: DataFrame | None  # the touched profiles' previous rows (None: full recompute)
    iterations: int
    edges: int
    rebuilt: bool = False  # a revoked key's components were rebuilt (they may have split)


def full_day(pairs: DataFrame, first_seen: DataFrame, max_iterations: int = 64) -> DayResult:
    """The assignment from every surviving edge (``profile_a``, ``profile_b``) up to the day."""
    recomputed, run = profile_components(pairs, first_seen, max_iterations)
    recomputed = recomputed.localCheckpoint(eager=True)
    return DayResult(recomputed, recomputed, None, None, run.iterations, run.edges)


def _ends(pairs: DataFrame) -> DataFrame:
    return (
        pairs.select(F.col("profile_a").alias("profile"))
        .unionByName(pairs.select(F.col("profile_b").alias("profile")))
        .distinct()
    )


def new_links(known: DataFrame, day_pairs: DataFrame) -> DataFrame:
    """The day's pairs that are not already inside one previous component.

    ``known``: (profile, master) of the pairs' ends that are in the previous assignment; at
    most two rows per day pair, small next to the state, so the pairs never shuffle it.
    """
    known = F.broadcast(known)
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
    (``history_pairs``), which may split them. ``first_seen``: (profile, first_seen) rows
    covering at least the profiles new to the state (several rows per profile are fine: the
    earliest counts); only the newcomers' rows are read, the others come from the state. The
    state is never shuffled; only the touched part is.
    """
    ends = _ends(day_pairs)
    if revoked_ends is not None:
        ends = ends.unionByName(revoked_ends.select("profile")).distinct()
    # The state is scanned three times: here, for the touched components, and to copy the rest.
    known = (
        previous.select("profile", "master")
        .join(F.broadcast(ends), "profile", "left_semi")
        .localCheckpoint(eager=True)
    )
    links = new_links(known, day_pairs).localCheckpoint(eager=True)
    seeds = _ends(links)
    if revoked_ends is not None:
        seeds = seeds.unionByName(revoked_ends.select("profile")).distinct()
    seeds = seeds.localCheckpoint(eager=True)
    touched_masters = known.join(seeds, "profile", "left_semi").select("master")
    before = (
        previous.join(F.broadcast(touched_masters.distinct()), "master", "left_semi")
        .select(*ASSIGNMENT_COLUMNS)
        .localCheckpoint(eager=True)
    )
    touched = before.select("profile").unionByName(seeds).distinct().localCheckpoint(eager=True)
    newcomers = seeds.join(before, "profile", "left_anti")
    recomputed_first_seen = before.select("profile", "first_seen").unionByName(
        first_seen.join(F.broadcast(newcomers), "profile", "left_semi")
        .groupBy("profile")
        .agg(F.min("first_seen").alias("first_seen"))
    )
    stars = before
    pairs = links
    rebuilding = False
    if revoked_ends is not None and history_pairs is not None:
        rebuilding = True
        rebuilt_masters = before.join(F.broadcast(revoked_ends), "profile", "left_semi").select(
            "master"
        )
        rebuilt = before.join(F.broadcast(rebuilt_masters.distinct()), "master", "left_semi")
        rebuilt = rebuilt.select("profile")
        stars = stars.join(rebuilt, "profile", "left_anti")
        # An edge never crosses components: one end among the rebuilt brings the whole edge.
        pairs = pairs.unionByName(
            history_pairs.join(F.broadcast(rebuilt.toDF("profile_a")), "profile_a", "left_semi")
        )
    pairs = pairs.unionByName(
        stars.where(F.col("profile") != F.col("master")).select(
            F.col("profile").alias("profile_a"), F.col("master").alias("profile_b")
        )
    )
    recomputed, run = profile_components(pairs, recomputed_first_seen, max_iterations)
    recomputed = recomputed.localCheckpoint(eager=True)
    kept = previous.join(F.broadcast(touched), "profile", "left_anti").select(*ASSIGNMENT_COLUMNS)
    assignment = kept.unionByName(recomputed.select(*ASSIGNMENT_COLUMNS))
    return DayResult(assignment, recomputed, touched, before, run.iterations, run.edges, rebuilding)


def day_change(result: DayResult, day_start: datetime) -> DayChange:
    """Merges, splits and new components caused by the day, from the recomputed part.

    A known person is a previous component, or an id first seen before ``day_start`` that had
    no link (a person of its own until today); a merge is a known person absorbed into
    another one, as when a returning browser logs in and its history joins the account's.
    """
    if result.before is None or result.touched is None:
        counts = _one_row(
            result.recomputed.agg(
                F.count(F.lit(1)).alias("profiles"), F.countDistinct("master").alias("components")
            )
        )
        return DayChange(
            int(counts["profiles"]),
            result.edges,
            result.iterations,
            0,
            0,
            0,
            int(counts["components"]),
        )
    before = result.before.select("profile", F.col("master").alias("old_master"))
    joined = result.recomputed.select("profile", "master", "first_seen").join(
        before, "profile", "full"
    )
    master, old_master = F.col("master"), F.col("old_master")
    lone = old_master.isNull() & (F.col("first_seen") < F.lit(day_start))
    person_before = F.coalesce(old_master, F.when(lone, F.col("profile")))
    linked = old_master.isNotNull() & master.isNotNull()
    known = person_before.isNotNull() & master.isNotNull()
    # Every previous component touched ends up in one or more new ones (or in profiles that
    # lost their last edge: "dropped"), so the sums over components reduce to distinct counts.
    # The joined rows are the touched profiles: the recomputed ones and those that lost their
    # last edge.
    counts = _one_row(
        joined.agg(
            F.count(F.lit(1)).alias("touched"),
            F.count(F.when(F.col("profile") == master, 1)).alias("new"),
            F.countDistinct(F.when(linked, F.struct(old_master, master))).alias("old_new"),
            F.countDistinct(F.when(linked, master)).alias("new_with_old"),
            F.countDistinct(old_master).alias("old"),
            F.sum(master.isNull().cast("int")).alias("dropped"),
            F.countDistinct(F.when(known, F.struct(person_before, master))).alias("known_new"),
            F.countDistinct(F.when(known, master)).alias("new_with_known"),
        )
    )
    old, new_with_old, new = int(counts["old"]), int(counts["new_with_old"]), int(counts["new"])
    old_new, dropped = int(counts["old_new"]), int(counts["dropped"] or 0)
    return DayChange(
        profiles_touched=int(counts["touched"]),
        edges_recomputed=result.edges,
        iterations=result.iterations,
        merges=int(counts["known_new"]) - int(counts["new_with_known"]),
        component_merges=old_new - new_with_old,
        splits=old_new + dropped - old,
        new_components=new - new_with_old,
    )


def _bucket_label(low: int, high: int | None) -> str:
    return str(low) if low == high else (f"{low}+" if high is None else f"{low}-{high}")


def _master_rows(assignment: DataFrame) -> DataFrame:
    """One row per component: its master's row carries the component's size."""
    return assignment.where(F.col("profile") == F.col("master")).select("master", "size")


def _one_row(aggregate: DataFrame) -> Row:
    """The single row of a global aggregation (which has one even over no rows)."""
    row = aggregate.first()
    if row is None:
        raise RuntimeError("a global aggregation returned no row")
    return row


def _by_size(rows: list) -> tuple[dict[int, int], int, str | None]:
    """Components per size and the largest one (ties: the smaller master), from the rows of
    a count per size with the smallest master of each size."""
    counts = {int(row["size"]): int(row["components"]) for row in rows}
    largest = max(counts, default=0)
    master = next((row["first_master"] for row in rows if row["size"] == largest), None)
    return counts, largest, master


def _masters_by_size(assignment: DataFrame) -> tuple[dict[int, int], int, str | None]:
    rows = (
        _master_rows(assignment)
        .groupBy("size")
        .agg(F.count(F.lit(1)).alias("components"), F.min("master").alias("first_master"))
        .collect()
    )
    return _by_size(rows)


def summarize(assignment: DataFrame) -> AssignmentSummary:
    """The summary of a whole assignment. Every row carries its component's size, so the
    masters' rows alone describe the components: two scans, no shuffle of the assignment."""
    return AssignmentSummary(*_masters_by_size(assignment))


def summarize_day(previous: AssignmentSummary, result: DayResult) -> AssignmentSummary | None:
    """The summary after an incremental day: the previous one minus the touched components
    plus the recomputed ones. None when the day rebuilt (possibly split) components: the
    largest one might then be an untouched component nobody counted; summarize in full."""
    if result.before is None or result.rebuilt:
        return None
    # The touched components before and after the day, and whether the previous largest
    # was among them, in one query.
    rows = (
        _master_rows(result.before)
        .withColumn("after", F.lit(False))
        .unionByName(_master_rows(result.recomputed).withColumn("after", F.lit(True)))
        .groupBy("after", "size")
        .agg(
            F.count(F.lit(1)).alias("components"),
            F.min("master").alias("first_master"),
            F.max(F.col("master") == F.lit(previous.largest_master)).alias("was_largest"),
        )
        .collect()
    )
    removed, _, _ = _by_size([row for row in rows if not row["after"]])
    added, added_size, added_master = _by_size([row for row in rows if row["after"]])
    counts = dict(previous.components_by_size)
    for size, count in removed.items():
        counts[size] = counts.get(size, 0) - count
    for size, count in added.items():
        counts[size] = counts.get(size, 0) + count
    counts = {size: count for size, count in counts.items() if count}
    if any(count < 0 for count in counts.values()):
        raise ValueError("identity summary: the previous day's summary does not match its state")
    largest = (previous.largest_size, previous.largest_master)
    touched = any(row["was_largest"] for row in rows if not row["after"])
    if touched:
        # It merged (no rebuilds here), so its new component is recomputed and larger than
        # any untouched one.
        largest = (added_size, added_master)
    elif (
        added_size
        and added_master is not None
        and (
            added_size > largest[0]
            or (added_size == largest[0] and (largest[1] is None or added_master < largest[1]))
        )
    ):
        largest = (added_size, added_master)
    return AssignmentSummary(counts, largest[0], largest[1])
