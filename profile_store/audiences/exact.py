"""Exact audience answers computed by Spark over the clean lake: the yardstick for sketches.

All leaves of a batch of queries are answered in ONE Spark job (events joined to the leaf
table), each leaf coming back as the 64-bit hashes of its users (Arrow columns, sorted and
deduplicated in numpy); the set algebra of the trees then runs in numpy. Hash collisions are
negligible at these sizes (2^-64 per pair).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from datetime import date
from typing import Protocol

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from profile_store.audiences.query import Leaf, Node, leaf_identity
from profile_store.audiences.query_sampler import CatalogEntry, build_catalog

LEAF_SCHEMA = (
    "leaf_id int, app_id string, event_type string, date_from date, date_to date, "
    "min_count int, attributes map<string,string>"
)


def exact_leaf_users(
    spark: SparkSession, events: DataFrame, all_leaves: Iterable[Leaf]
) -> dict[tuple, np.ndarray]:
    """``leaf_identity`` of each distinct leaf -> sorted unique int64 hashes of its users."""
    unique = list(dict.fromkeys(leaf_identity(leaf) for leaf in all_leaves))
    if not unique:
        return {}
    table = spark.createDataFrame(
        [
            (i, app, event, start, end, min_count or 1, dict(attributes))
            for i, (app, event, start, end, min_count, attributes) in enumerate(unique)
        ],
        LEAF_SCHEMA,
    )
    matches_attributes = F.forall(
        F.map_entries("l.attributes"),
        lambda entry: F.coalesce(
            F.try_element_at(F.col("e.event_attributes"), entry["key"]) == entry["value"],
            F.lit(False),
        ),
    )
    joined = events.alias("e").join(
        F.broadcast(table.alias("l")),
        (F.col("e.app_id") == F.col("l.app_id"))
        & (F.col("e.event_type") == F.col("l.event_type"))
        & (F.to_date("e.event_time") >= F.col("l.date_from"))
        & (F.to_date("e.event_time") <= F.col("l.date_to")),
    )
    per_user = (
        joined.where(matches_attributes)
        .groupBy("l.leaf_id", "l.min_count", "e.user_id")
        .count()
        .where(F.col("count") >= F.col("min_count"))
        .select("leaf_id", F.xxhash64("user_id").alias("user_hash"))
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


class ExactSide(Protocol):
    """Where an accuracy run takes its catalog and its exact answers from."""

    def catalog(self, decisions: DataFrame) -> list[CatalogEntry]: ...

    def leaf_users(self, all_leaves: Iterable[Leaf]) -> dict[tuple, np.ndarray]: ...


class EventsExactSide:
    """Both read from ``events`` each time: for windows whose days keep no leaf counts."""

    def __init__(self, spark: SparkSession, events: DataFrame) -> None:
        self.spark = spark
        self.events = events

    def catalog(self, decisions: DataFrame) -> list[CatalogEntry]:
        return build_catalog(self.events, decisions)

    def leaf_users(self, all_leaves: Iterable[Leaf]) -> dict[tuple, np.ndarray]:
        return exact_leaf_users(self.spark, self.events, all_leaves)


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
