"""One day of events -> bridging keys per profile, and per-profile first/last seen.

The key table is the identity graph's small memory of the events: one row per (key type, key,
profile) per day, so that whole-history questions (how many profiles share this login? which
profile had it first?) never re-read events.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.identity.rules import FUZZY_IP_UA, MEMBER_ID, BridgingRules

KEY_COLUMNS = ("key_type", "key", "profile", "first_seen", "last_seen", "events")
PROFILE_COLUMNS = ("profile", "id_type", "first_seen", "last_seen", "events")

_IPV4_24 = r"^(\d{1,3}\.\d{1,3}\.\d{1,3})\.\d{1,3}$"


def _fuzzy_key(events: DataFrame, window_minutes: int) -> Column:
    """``a.b.c|user agent|window start``: same /24, same agent, same tumbling window."""
    prefix = F.regexp_extract(F.col("ip"), _IPV4_24, 1)
    seconds = window_minutes * 60
    window = F.floor(F.unix_timestamp("event_time") / seconds) * seconds
    return F.when(
        (prefix != "") & F.col("user_agent").isNotNull() & (F.trim("user_agent") != ""),
        F.concat_ws("|", prefix, F.col("user_agent"), window.cast("string")),
    )


def day_keys(events: DataFrame, rules: BridgingRules) -> DataFrame:
    """Per (key_type, key, profile) of one day: first and last event time, number of events.

    Null keys are absence, not keys; blocklisted values are kept here (the guard reports them).
    """
    columns = [F.struct(F.lit(MEMBER_ID).alias("key_type"), F.col("member_id").alias("key"))]
    for alt_type in sorted(rules.alt_id_weights):
        columns.append(
            F.struct(
                F.lit(alt_type).alias("key_type"),
                F.col("alt_ids").getItem(alt_type).alias("key"),
            )
        )
    if rules.fuzzy_enabled:
        columns.append(
            F.struct(
                F.lit(FUZZY_IP_UA).alias("key_type"),
                _fuzzy_key(events, rules.fuzzy_window_minutes).alias("key"),
            )
        )
    exploded = events.select(
        F.col("user_id").alias("profile"),
        "event_time",
        F.explode(F.array(*columns)).alias("k"),
    ).where(F.col("k.key").isNotNull())
    return (
        exploded.groupBy(
            F.col("k.key_type").alias("key_type"), F.col("k.key").alias("key"), "profile"
        )
        .agg(
            F.min("event_time").alias("first_seen"),
            F.max("event_time").alias("last_seen"),
            F.count(F.lit(1)).alias("events"),
        )
        .select(*KEY_COLUMNS)
    )


def day_profiles(events: DataFrame) -> DataFrame:
    """Per profile seen that day: id type, first and last event time, number of events."""
    return (
        events.groupBy(F.col("user_id").alias("profile"))
        .agg(
            F.first("id_type").alias("id_type"),
            F.min("event_time").alias("first_seen"),
            F.max("event_time").alias("last_seen"),
            F.count(F.lit(1)).alias("events"),
        )
        .select(*PROFILE_COLUMNS)
    )


def profiles_first_seen(profile_history: DataFrame) -> DataFrame:
    """Over daily profile tables: each profile's earliest event time (the master criterion)."""
    return profile_history.groupBy("profile").agg(F.min("first_seen").alias("first_seen"))
