"""Clean bridging keys -> weighted edges between profiles.

A key shared by n profiles yields n - 1 edges, a star to the key's first-seen profile (a
star to the oldest instead of the full graph), each keyed by the sorted pair
(``profile_a`` < ``profile_b``). A day's edges are those of the profiles that used a clean key
that day; the hub comes from the whole history, so it stays the same from day to day.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from profile_store.identity.rules import BridgingRules
from profile_store.identity.super_nodes import guard, key_stats, quarantine

EDGE_COLUMNS = (
    "profile_a",
    "profile_b",
    "rule",
    "key_type",
    "key",
    "weight",
    "first_seen",
    "last_seen",
)


def _lookup(mapping: Mapping[str, object], column: str):
    expression = None
    for name, value in mapping.items():
        expression = (F if expression is None else expression).when(
            F.col(column) == name, F.lit(value)
        )
    return expression


def star_edges(day_keys: DataFrame, guarded: DataFrame, rules: BridgingRules) -> DataFrame:
    """Edges from every profile that used a clean key on the day to that key's hub.

    ``first_seen``: when both ends had been seen with the key (the later of the two first
    sightings); ``last_seen``: the profile's last use of the key that day.
    """
    clean = guarded.where(F.col("reason").isNull()).select(
        "key_type", "key", "hub", "hub_first_seen"
    )
    weights = {key_type: rules.weight_of(key_type) for key_type in rules.key_types}
    rule_names = {key_type: rules.rule_of(key_type) for key_type in rules.key_types}
    members = day_keys.join(clean, ["key_type", "key"]).where(F.col("profile") != F.col("hub"))
    return members.select(
        F.least("profile", "hub").alias("profile_a"),
        F.greatest("profile", "hub").alias("profile_b"),
        _lookup(rule_names, "key_type").alias("rule"),
        "key_type",
        "key",
        _lookup(weights, "key_type").cast("double").alias("weight"),
        F.greatest("first_seen", "hub_first_seen").alias("first_seen"),
        F.col("last_seen"),
    )


def day_edges(
    day_keys: DataFrame, key_history: DataFrame, day: date, rules: BridgingRules
) -> tuple[DataFrame, DataFrame]:
    """The day's edges and its quarantine, from its key table and the key history.

    ``key_history``: daily key tables with a ``date`` column, up to and including ``day`` (and
    back to the configured history window), restricted by the caller.
    """
    touched = key_history.join(
        day_keys.select("key_type", "key").distinct(), ["key_type", "key"], "left_semi"
    )
    # Both outputs start from the guarded keys (the history's per-key stats): computed once.
    guarded = guard(day_keys, key_stats(touched, day), rules).localCheckpoint(eager=True)
    return star_edges(day_keys, guarded, rules).select(*EDGE_COLUMNS), quarantine(guarded)
