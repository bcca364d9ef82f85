"""Activation: the members of saved audiences, counted EXACTLY in Spark over the clean events,
as segment memberships for the profile compaction.

A saved audience marked active (``saved.Activation``) is evaluated each day D with the tree
semantics of the estimate: a leaf is the users with at least ``min_count`` (default 1) events of
its app and event type, with every filtered attribute value, on its days; ``last_days`` ends on
D; union, intersection and difference are the set operations on user ids. Each member becomes a
hit ``(profile, segment, expiry = end of D + ttl)``; ``compacted_profiles`` folds the hits into
the profile state like the segment feed, so the segment reaches every id of the member's person
(identity component), and stops being renewed once the audience is deactivated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from profile_store.audiences.query import Leaf, Node, QueryError, leaves, parse_query, resolve_dates
from profile_store.audiences.saved import SavedAudience
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.lake.layout import events_day
from profile_store.lake.storage import LakeStorage
from profile_store.profiles.segment_rules import DAY_MS

HITS_SCHEMA = "profile string, segment string, expiry_ms long, tenant string, audience_id string"


@dataclass
class ActivatedAudience:
    """One audience's evaluation on a day: its members, or why it was skipped."""

    audience: SavedAudience
    query: Node | None
    members: int = 0
    skipped: str | None = None


def leaf_users(events: DataFrame, leaf: Leaf) -> DataFrame:
    """``user_id`` of the users the leaf selects (one row each)."""
    condition = (
        (F.col("app_id") == F.lit(leaf.app_id))
        & (F.col("event_type") == F.lit(leaf.event_type))
        & F.to_date("event_time").between(F.lit(leaf.date_from), F.lit(leaf.date_to))
    )
    for name, value in sorted(leaf.attributes.items()):
        condition = condition & (F.try_element_at("event_attributes", F.lit(name)) == F.lit(value))
    matching = events.where(condition)
    if leaf.min_count and leaf.min_count > 1:
        counted = matching.groupBy("user_id").count()
        return counted.where(F.col("count") >= leaf.min_count).select("user_id")
    return matching.select("user_id").distinct()


def tree_users(events: DataFrame, node: Node) -> DataFrame:
    """The users of a whole tree: union, intersection and difference of user ids."""
    if isinstance(node, Leaf):
        return leaf_users(events, node)
    children = [tree_users(events, child) for child in node.children]
    result = children[0]
    for child in children[1:]:
        if node.operator == "union":
            result = result.union(child)
        elif node.operator == "intersection":
            result = result.intersect(child)
        else:
            result = result.subtract(child)
    return result.distinct() if node.operator == "union" else result


def resolved_query(audience: SavedAudience, day: date) -> Node:
    """The audience's tree on ``day``: ``last_days`` leaves end on it."""
    return resolve_dates(parse_query(audience.query), day)


def _missing_days(storage: LakeStorage, query: Node) -> list[date]:
    days = sorted({d for leaf in leaves(query) for d in leaf.days()})
    return [d for d in days if not storage.exists(events_day(d))]


def activation_hits(
    spark: SparkSession,
    storage: LakeStorage,
    audiences: Iterable[SavedAudience],
    day: date,
    end_of_day_ms: int,
) -> tuple[DataFrame, list[ActivatedAudience]]:
    """Every active audience's members on ``day`` as hits (``HITS_SCHEMA``), and per audience
    what happened. An audience whose days are not all in the lake (or whose query no longer
    parses) is skipped with the reason: its members cannot be counted exactly."""
    results: list[ActivatedAudience] = []
    frames: list[DataFrame] = []
    for audience in audiences:
        activation = audience.activation
        if activation is None or not activation.active:
            continue
        try:
            query = resolved_query(audience, day)
        except QueryError as exc:
            results.append(ActivatedAudience(audience, None, skipped=str(exc)))
            continue
        missing = _missing_days(storage, query)
        if missing:
            shown = ", ".join(d.isoformat() for d in missing[:5])
            more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
            skip = f"no clean events for {shown}{more}"
            results.append(ActivatedAudience(audience, query, skipped=skip))
            continue
        days = sorted({d for leaf in leaves(query) for d in leaf.days()})
        events = spark.read.schema(EVENTS_SCHEMA).parquet(
            *[storage.spark_uri(events_day(d)) for d in days]
        )
        expiry = end_of_day_ms + int(round(activation.ttl_days * DAY_MS))
        members = tree_users(events, query).select(
            F.col("user_id").alias("profile"),
            F.lit(activation.segment).alias("segment"),
            F.lit(expiry).cast("long").alias("expiry_ms"),
            F.lit(audience.tenant).alias("tenant"),
            F.lit(audience.id).alias("audience_id"),
        )
        frames.append(members)
        results.append(ActivatedAudience(audience, query))
    hits = spark.createDataFrame([], HITS_SCHEMA)
    for frame in frames:
        hits = hits.unionByName(frame)
    return hits, results
