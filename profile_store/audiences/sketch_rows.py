"""Sketch rows of one day, built in Spark with the native DataSketches aggregates.

One row per (app, event type, combination of kept attribute values): a theta sketch of its
users, a tuple sketch of events per user (summed), the kept attributes themselves, and counts.
One more row per (app, event type) aggregates all combinations: it answers leaves without
attribute filters with a single row, and it is a union of the combination sketches, so the
events are read once.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.audiences.rowkey import AGGREGATE_HASH

DEFAULT_LG_K = 12


def _escaped(column: str) -> Column:
    return F.replace(F.replace(F.col(column), F.lit("%"), F.lit("%25")), F.lit("|"), F.lit("%7C"))


def _rowkey(day_text: str) -> Column:
    return F.concat_ws(
        "|", _escaped("app_id"), _escaped("event_type"), F.lit(day_text), F.col("attr_hash")
    )


def kept_attribute_lists(decisions: DataFrame) -> DataFrame:
    """(app_id, event_type) -> sorted array of the attribute names kept for the day."""
    return (
        decisions.where(F.col("kept"))
        .groupBy("app_id", "event_type")
        .agg(F.array_sort(F.collect_set("attribute")).alias("kept_attributes"))
    )


def combination_sketches(events: DataFrame, kept: DataFrame, lg_k: int = DEFAULT_LG_K) -> DataFrame:
    """Sketches per (app, event type, kept-attribute combination)."""
    no_names = F.array().cast("array<string>")
    with_kept = events.join(F.broadcast(kept), ["app_id", "event_type"], "left")
    kept_map = F.map_filter(
        "event_attributes",
        lambda name, _value: F.array_contains(F.coalesce("kept_attributes", no_names), name),
    )
    combination = F.array_sort(F.map_entries(kept_map))
    attr_hash = F.lpad(F.lower(F.hex(F.xxhash64(combination))), 16, "0")
    attr_hash = F.when(attr_hash == AGGREGATE_HASH, F.lit("0" * 15 + "1")).otherwise(attr_hash)
    return (
        with_kept.select(
            "app_id",
            "event_type",
            "user_id",
            combination.alias("combination"),
            attr_hash.alias("attr_hash"),
        )
        .groupBy("app_id", "event_type", "attr_hash")
        .agg(
            F.first("combination").alias("combination"),
            F.theta_sketch_agg("user_id", lg_k).alias("theta"),
            F.tuple_sketch_agg_integer("user_id", F.lit(1), lg_k, "sum").alias("counts"),
            F.count(F.lit(1)).alias("events"),
        )
    )


def aggregate_sketches(combinations: DataFrame, lg_k: int = DEFAULT_LG_K) -> DataFrame:
    """One row per (app, event type): the union of its combination sketches."""
    return combinations.groupBy("app_id", "event_type").agg(
        F.lit(AGGREGATE_HASH).alias("attr_hash"),
        F.array().cast("array<struct<key:string,value:string>>").alias("combination"),
        F.theta_union_agg("theta", lg_k).alias("theta"),
        F.tuple_union_agg_integer("counts", lg_k, "sum").alias("counts"),
        F.sum("events").alias("events"),
    )


def day_sketch_rows(
    events: DataFrame, decisions: DataFrame, day_text: str, lg_k: int = DEFAULT_LG_K
) -> DataFrame:
    """Every sketch row of a day with its HBase row key (``day_text`` is ``yyyymmdd``)."""
    combinations = combination_sketches(events, kept_attribute_lists(decisions), lg_k).persist()
    rows = combinations.unionByName(aggregate_sketches(combinations, lg_k))
    return rows.select(
        _rowkey(day_text).alias("rowkey"),
        "app_id",
        "event_type",
        "attr_hash",
        "combination",
        "theta",
        "counts",
        "events",
        F.theta_sketch_estimate("theta").alias("users_estimate"),
    )
