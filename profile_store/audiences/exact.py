"""Exact audience answers computed by Spark over the clean lake: the yardstick for sketches.

All leaves of a batch of queries are answered in ONE Spark job (each event joined to the
leaves of its app and event type), each leaf coming back as the 64-bit hashes of its users
(Arrow columns, sorted and deduplicated in numpy); the set algebra of the trees then runs in
numpy. Hash collisions are negligible at these sizes (2^-64 per pair).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import date

import numpy as np
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from profile_store.audiences.query import Leaf, Node, leaf_identity

PAIR_LEAVES_SCHEMA = (
    "app_id string, event_type string, leaves array<struct<leaf_id: int, date_from: date, "
    "date_to: date, min_count: int, attributes: map<string,string>>>"
)


def exact_leaf_users(
    spark: SparkSession, events: DataFrame, all_leaves: Iterable[Leaf]
) -> dict[tuple, np.ndarray]:
    """``leaf_identity`` of each distinct leaf -> sorted unique int64 hashes of its users.

    The leaves are broadcast as one row per (app, event type) holding that pair's leaves, so an
    event meets its pair's leaves in one joined row (not one joined copy of the event per leaf),
    and each leaf it matches adds its id and the user's hash: the count per leaf and user
    groups two numbers, not the user's text.
    """
    unique = list(dict.fromkeys(leaf_identity(leaf) for leaf in all_leaves))
    if not unique:
        return {}
    by_pair: dict[tuple[str, str], list[tuple]] = {}
    for i, (app, event, start, end, min_count, attributes) in enumerate(unique):
        by_pair.setdefault((app, event), []).append(
            (i, start, end, min_count or 1, dict(attributes))
        )
    table = spark.createDataFrame(
        [(app, event, pair_leaves) for (app, event), pair_leaves in by_pair.items()],
        PAIR_LEAVES_SCHEMA,
    )
    day = F.to_date("event_time")

    def matches(leaf: Column) -> Column:
        attributes = F.forall(
            F.map_entries(leaf["attributes"]),
            lambda entry: F.coalesce(
                F.try_element_at(F.col("event_attributes"), entry["key"]) == entry["value"],
                F.lit(False),
            ),
        )
        return (day >= leaf["date_from"]) & (day <= leaf["date_to"]) & attributes

    matched = events.join(F.broadcast(table), ["app_id", "event_type"]).select(
        F.xxhash64("user_id").alias("user_hash"),
        F.explode(F.filter("leaves", matches)).alias("leaf"),
    )
    per_user = (
        matched.groupBy(
            F.col("leaf.leaf_id").alias("leaf_id"),
            F.col("leaf.min_count").alias("min_count"),
            "user_hash",
        )
        .count()
        .where(F.col("count") >= F.col("min_count"))
        .select("leaf_id", "user_hash")
    )
    # Arrow columns, not Row objects: a check's leaves hold millions of users between them.
    found = per_user.toArrow()
    leaf_ids = found.column("leaf_id").to_numpy()
    hashes = found.column("user_hash").to_numpy()
    order = np.argsort(leaf_ids, kind="stable")
    leaf_ids, hashes = leaf_ids[order], hashes[order]
    bounds = np.searchsorted(leaf_ids, np.arange(len(unique) + 1))
    return {
        identity: np.unique(hashes[bounds[i] : bounds[i + 1]]).astype(np.int64)
        for i, identity in enumerate(unique)
    }


def exact_users(node: Node, leaf_users: dict[tuple, np.ndarray]) -> np.ndarray:
    """The exact user set of a tree, from the exact sets of its leaves."""
    if isinstance(node, Leaf):
        return leaf_users[leaf_identity(node)]
    children = [exact_users(child, leaf_users) for child in node.children]
    result = children[0]
    for child in children[1:]:
        if node.operator == "union":
            result = np.union1d(result, child)
        elif node.operator == "intersection":
            result = np.intersect1d(result, child, assume_unique=True)
        else:
            result = np.setdiff1d(result, child, assume_unique=True)
    return result


def counted_leaves(all_leaves: Iterable[Leaf]) -> list[Leaf]:
    """Each leaf with a minimum count, without it: the rows its sketch is read from (see
    ``operand_size``); ask ``exact_leaf_users`` for these beside the leaves themselves."""
    return [replace(leaf, min_count=None) for leaf in all_leaves if leaf.min_count]


def operand_size(node: Node, leaf_users: dict[tuple, np.ndarray]) -> int:
    """The largest set the tree's sketches read: its error scales with that, not the answer.

    A leaf reads its rows' users (all of them, whatever its minimum count: a "3 times" leaf is
    a subset sampled at the rate of the whole); an operation reads its own result and its
    operands. ``leaf_users`` must hold the ``counted_leaves`` too.
    """
    if isinstance(node, Leaf):
        return len(leaf_users[leaf_identity(replace(node, min_count=None))])
    own = len(exact_users(node, leaf_users))
    return max(own, *(operand_size(child, leaf_users) for child in node.children))


def days_spanned(all_leaves: Iterable[Leaf]) -> list[date]:
    return sorted({day for leaf in all_leaves for day in leaf.days()})
