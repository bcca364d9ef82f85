"""Sketch rows of one day, built in Spark with the native DataSketches aggregates.

One row per (app, event type, combination of kept attribute values): a theta sketch of its
users, a tuple sketch of events per user (summed), the kept attributes themselves, and counts.
One more row per (app, event type) aggregates all combinations: it answers leaves without
attribute filters with a single row. One marginal row per kept (attribute, value) does the same
for leaves filtering on one attribute, and a kept marker per attribute proves the marginals of
the day complete. Aggregates and marginals are unions of the combination sketches, so the
events are read once.
"""

from __future__ import annotations

from datasketches import AccumulatorPolicy, update_theta_sketch, update_tuple_sketch
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.audiences.rowkey import AGGREGATE_HASH, MARGINAL_MARK
from profile_store.audiences.tuple_serde import SERDE

DEFAULT_LG_K = 12


def _escaped(column: str | Column) -> Column:
    column = F.col(column) if isinstance(column, str) else column
    return F.replace(F.replace(column, F.lit("%"), F.lit("%25")), F.lit("|"), F.lit("%7C"))


def _rowkey(day_text: str) -> Column:
    """``app|event|day|`` and the row kind's own suffix (see rowkey.py)."""
    marker = F.concat_ws("|", F.lit(MARGINAL_MARK), _escaped("attribute"))
    suffix = (
        F.when(F.col("row_kind") == "marginal", F.concat_ws("|", marker, _escaped("value")))
        .when(F.col("row_kind") == "kept_marker", marker)
        .otherwise(F.col("attr_hash"))
    )
    return F.concat_ws("|", _escaped("app_id"), _escaped("event_type"), F.lit(day_text), suffix)


def kept_attribute_lists(decisions: DataFrame) -> DataFrame:
    """Every (app_id, event_type) of the trimming window -> sorted kept attribute names."""
    kept_name = F.when(F.col("kept"), F.col("attribute"))
    return decisions.groupBy("app_id", "event_type").agg(
        F.array_sort(F.collect_set(kept_name)).alias("kept_attributes")
    )


def _empty_sketches(lg_k: int) -> tuple[bytes, bytes]:
    theta = update_theta_sketch(lg_k).compact().serialize()
    counts = update_tuple_sketch(AccumulatorPolicy(), lg_k).compact().serialize(SERDE)
    return theta, counts


def kept_combination() -> Column:
    """The event's entries of the kept attributes (column ``kept_attributes``, sorted), by name.

    Walking the sorted kept names and looking each one up in the event's map gives the entries
    sorted without sorting every event's entries.
    """
    entries = F.transform(
        F.coalesce("kept_attributes", F.array().cast("array<string>")),
        lambda name: F.struct(name.alias("key"), F.col("event_attributes")[name].alias("value")),
    )
    return F.filter(entries, lambda entry: F.map_contains_key("event_attributes", entry["key"]))


def combination_sketches(events: DataFrame, kept: DataFrame, lg_k: int = DEFAULT_LG_K) -> DataFrame:
    """Sketches per (app, event type, kept-attribute combination); the combination is hashed
    once per group, after the aggregation, not once per event."""
    with_kept = events.join(F.broadcast(kept), ["app_id", "event_type"], "left")
    combination = kept_combination()
    attr_hash = F.lpad(F.lower(F.hex(F.xxhash64("combination"))), 16, "0")
    attr_hash = F.when(attr_hash == AGGREGATE_HASH, F.lit("0" * 15 + "1")).otherwise(attr_hash)
    return (
        with_kept.select("app_id", "event_type", "user_id", combination.alias("combination"))
        .groupBy("app_id", "event_type", "combination")
        .agg(
            F.theta_sketch_agg("user_id", lg_k).alias("theta"),
            F.tuple_sketch_agg_integer("user_id", F.lit(1), lg_k, "sum").alias("counts"),
            F.count(F.lit(1)).cast("long").alias("events"),
        )
        .withColumn("attr_hash", attr_hash)
    )


def union_sketches(combinations: DataFrame, kept: DataFrame, lg_k: int = DEFAULT_LG_K) -> DataFrame:
    """Aggregate and marginal sketches of a day, unions of its combination sketches.

    One aggregation makes both: each combination contributes to its (app, event type) whole,
    where ``attribute`` is null, and to the marginal of each of its entries. Every pair of the
    trimming window contributes an empty entry to its whole, so that a pair without events on
    the day still gets its aggregate row, which records that the day was built and which
    attributes it kept.
    """
    empty_theta, empty_counts = _empty_sketches(lg_k)
    whole = F.struct(
        F.lit(None).cast("string").alias("key"), F.lit(None).cast("string").alias("value")
    )
    parts = combinations.select(
        "app_id",
        "event_type",
        F.inline(F.concat("combination", F.array(whole))),
        "theta",
        "counts",
        "events",
    ).withColumnRenamed("key", "attribute")
    known = kept.select(
        "app_id",
        "event_type",
        F.lit(empty_theta).alias("theta"),
        F.lit(empty_counts).alias("counts"),
        F.lit(0).cast("long").alias("events"),
        "kept_attributes",
    )
    unions = (
        parts.unionByName(known, allowMissingColumns=True)
        .groupBy("app_id", "event_type", "attribute", "value")
        .agg(
            F.theta_union_agg("theta", lg_k).alias("theta"),
            F.tuple_union_agg_integer("counts", lg_k, "sum").alias("counts"),
            F.sum("events").alias("events"),
            # Only the pair's empty entry carries the list.
            F.first("kept_attributes", ignorenulls=True).alias("kept_attributes"),
        )
    )
    is_whole = F.col("attribute").isNull()
    return unions.select(
        "app_id",
        "event_type",
        F.when(is_whole, "aggregate").otherwise("marginal").alias("row_kind"),
        F.when(is_whole, F.lit(AGGREGATE_HASH)).alias("attr_hash"),
        F.when(is_whole, F.array().cast("array<struct<key:string,value:string>>")).alias(
            "combination"
        ),
        "attribute",
        "value",
        "theta",
        "counts",
        "events",
        "kept_attributes",
    )


def kept_markers(kept: DataFrame) -> DataFrame:
    """One row per (app, event type, attribute kept that day)."""
    return kept.select("app_id", "event_type", F.explode("kept_attributes").alias("attribute"))


_COLUMNS = {
    "attr_hash": "string",
    "combination": "array<struct<key:string,value:string>>",
    "attribute": "string",
    "value": "string",
    "theta": "binary",
    "counts": "binary",
    "events": "bigint",
    "kept_attributes": "array<string>",
}


def _as_rows(frame: DataFrame, kind: str | None = None) -> DataFrame:
    """``frame`` with every column of the union (missing ones null) and its row kind (``kind``
    or the frame's own ``row_kind``)."""
    columns = [
        (F.col(name) if name in frame.columns else F.lit(None)).cast(kind_type).alias(name)
        for name, kind_type in _COLUMNS.items()
    ]
    row_kind = F.col("row_kind") if kind is None else F.lit(kind).alias("row_kind")
    return frame.select("app_id", "event_type", row_kind, *columns)


def day_sketch_rows(
    events: DataFrame, decisions: DataFrame, day_text: str, lg_k: int = DEFAULT_LG_K
) -> DataFrame:
    """Every sketch row of a day with its HBase row key (``day_text`` is ``yyyymmdd``).

    Runs the events' aggregation right away (checkpointed); the rest stays lazy.
    """
    # The kept lists feed the combinations, the empty aggregate entries and the markers.
    kept = kept_attribute_lists(decisions).localCheckpoint(eager=True)
    # Computed here, once: the aggregate and marginal rows union these (one row per
    # combination), and Spark would otherwise aggregate the events again for them.
    combinations = combination_sketches(events, kept, lg_k).localCheckpoint(eager=True)
    rows = (
        _as_rows(combinations, "combination")
        .unionByName(_as_rows(union_sketches(combinations, kept, lg_k)))
        .unionByName(_as_rows(kept_markers(kept), "kept_marker"))
    )
    return rows.select(
        _rowkey(day_text).alias("rowkey"),
        "row_kind",
        "app_id",
        "event_type",
        "attr_hash",
        "combination",
        "attribute",
        "value",
        "theta",
        "counts",
        "events",
        F.theta_sketch_estimate("theta").alias("users_estimate"),
        "kept_attributes",
    )
