"""The super-node guard: keys that must not bridge anything.

Two kinds. *Blocklisted* values are placeholders (``0``, ``unknown``, ``null``, empty, or a
configured pattern): they never identify anyone. *Super-nodes* are real values shared by more
than ``max_profiles_per_key`` profiles over the whole history (shared or test logins, public
devices): linking on them would merge unrelated persons into one giant component. The count is
over the history, not the day: a login used by 30 devices a day for a week is a super-node.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.identity.rules import BridgingRules

REASON_BLOCKLIST = "blocklist"
REASON_SUPER_NODE = "super_node"

QUARANTINE_COLUMNS = (
    "key_type",
    "key",
    "reason",
    "profiles",
    "profiles_before",
    "revokes_edges",
    "first_seen",
    "last_seen",
)


def blocklisted(key: Column, rules: BridgingRules) -> Column:
    """True when the key value is a placeholder: a blocklist value or a pattern match."""
    normalized = F.lower(F.trim(key))
    condition = normalized.isin(*[value.lower() for value in rules.blocklist])
    condition = condition | (normalized == F.lit(""))
    for pattern in rules.blocklist_patterns:
        condition = condition | key.rlike(f"^(?:{pattern})$")
    return condition


def key_stats(key_history: DataFrame, day: date) -> DataFrame:
    """Per key over the history (rows with a ``date`` column): profile counts and hub.

    ``profiles``: distinct profiles up to and including ``day``; ``profiles_before``: before it.
    ``hub``: the key's first-seen profile (earliest first_seen, ties by profile id), the centre
    of its star of edges; ``hub_first_seen`` its first time with the key.
    """
    return key_history.groupBy("key_type", "key").agg(
        F.countDistinct("profile").alias("profiles"),
        F.countDistinct(F.when(F.col("date") < F.lit(day), F.col("profile"))).alias(
            "profiles_before"
        ),
        F.min_by("profile", F.struct("first_seen", "profile")).alias("hub"),
        F.min("first_seen").alias("hub_first_seen"),
        F.max("last_seen").alias("last_seen"),
    )


def guard(day_keys: DataFrame, stats: DataFrame, rules: BridgingRules) -> DataFrame:
    """The keys of the day with their history stats and a ``reason`` (null: the key is clean).

    ``revokes_edges``: a super-node that was clean before this day and had already linked
    profiles, so edges made on earlier days must be withdrawn (components recompute those).
    """
    limit = rules.max_profiles_per_key
    seen = day_keys.groupBy("key_type", "key").agg(
        F.min("first_seen").alias("day_first_seen"), F.max("last_seen").alias("day_last_seen")
    )
    joined = seen.join(stats, ["key_type", "key"], "left")
    reason = (
        F.when(blocklisted(F.col("key"), rules), F.lit(REASON_BLOCKLIST))
        .when(F.col("profiles") > limit, F.lit(REASON_SUPER_NODE))
        .otherwise(F.lit(None).cast("string"))
    )
    revokes = (
        (reason == REASON_SUPER_NODE)
        & (F.col("profiles_before") >= 2)
        & (F.col("profiles_before") <= limit)
    )
    return joined.select(
        "key_type",
        "key",
        reason.alias("reason"),
        "profiles",
        "profiles_before",
        F.coalesce(revokes, F.lit(False)).alias("revokes_edges"),
        "hub",
        "hub_first_seen",
        "day_first_seen",
        "day_last_seen",
        "last_seen",
    )


def quarantine(guarded: DataFrame) -> DataFrame:
    """The day's keys that made no edge, with the reason and how many profiles shared them."""
    of_the_day = {"first_seen": "day_first_seen", "last_seen": "day_last_seen"}
    columns = [F.col(of_the_day.get(name, name)).alias(name) for name in QUARANTINE_COLUMNS]
    return guarded.where(F.col("reason").isNotNull()).select(*columns)
