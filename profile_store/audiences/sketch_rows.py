"""Sketch rows of one day, built in Spark with the native DataSketches aggregates.

One row per (app, event type, combination of kept attribute values): a theta sketch of its
users, a tuple sketch of events per user (summed), the kept attributes themselves, and counts.
One more row per (app, event type) aggregates all combinations: it answers leaves without
attribute filters with a single row. One marginal row per kept (attribute, value) does the same
for leaves filtering on one attribute, and a kept marker per attribute proves the marginals of
the day complete. One pair row per two kept attributes' values seen on one event does the same
for leaves filtering on two attributes (a marker per attribute pair proves them complete), for
every attribute pair whose value pairs of the day stay within ``MAX_PAIR_ROWS``: beyond that, a
two-attribute leaf scans the day's combinations as any other multi-attribute leaf does.
Aggregates, marginals and pairs are unions of the combination sketches, so the events are read
once.
"""

from __future__ import annotations

from datasketches import AccumulatorPolicy, update_theta_sketch, update_tuple_sketch
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from profile_store.audiences.rowkey import AGGREGATE_HASH, MARGINAL_MARK, PAIR_MARK
from profile_store.audiences.tuple_serde import SERDE

DEFAULT_LG_K = 12
MAX_PAIR_ROWS = 2_000
"""Value pairs of one attribute pair on one day, at most, to get pair rows. A two-attribute
leaf then reads one row per day instead of scanning every combination row of its days; an
attribute pair with more value pairs costs more rows than the scan it saves."""


def _escaped(column: str | Column) -> Column:
    column = F.col(column) if isinstance(column, str) else column
    return F.replace(F.replace(column, F.lit("%"), F.lit("%25")), F.lit("|"), F.lit("%7C"))


def _rowkey(day_text: str) -> Column:
    """``app|event|day|`` and the row kind's own suffix (see rowkey.py)."""
    marker = F.concat_ws("|", F.lit(MARGINAL_MARK), _escaped("attribute"))
    pair_marker = F.concat_ws("|", F.lit(PAIR_MARK), _escaped("attribute"), _escaped("attribute2"))
    pair = F.concat_ws("|", pair_marker, _escaped("value"), _escaped("value2"))
    kind = F.col("row_kind")
    suffix = (
        F.when(kind == "marginal", F.concat_ws("|", marker, _escaped("value")))
        .when(kind == "kept_marker", marker)
        .when(kind == "pair", pair)
        .when(kind == "pair_marker", pair_marker)
        .otherwise(F.col("attr_hash"))
    )
    return F.concat_ws("|", _escaped("app_id"), _escaped("event_type"), F.lit(day_text), suffix)


_TRIM_FIGURES = ("distinct_values", "appearances", "window_days", "max_distinct",
                 "max_distinct_ratio", "few_values")  # fmt: skip


def kept_attribute_lists(decisions: DataFrame) -> DataFrame:
    """Every (app_id, event_type) of the trimming window -> sorted kept attribute names, and
    the trimmed ones as JSON: per attribute, the limit it crossed and the figures (null for
    decisions written before they carried them)."""
    kept_name = F.when(F.col("kept"), F.col("attribute"))
    if "trim_reason" not in decisions.columns:
        trimmed = F.lit(None).cast("string")
    else:
        figures = F.struct(F.col("trim_reason").alias("reason"), *_TRIM_FIGURES)
        entry = F.when(
            F.col("trim_reason").isNotNull(),
            F.struct(F.col("attribute").alias("key"), figures.alias("value")),
        )
        trimmed = F.to_json(F.map_from_entries(F.collect_list(entry)))
    return decisions.groupBy("app_id", "event_type").agg(
        F.array_sort(F.collect_set(kept_name)).alias("kept_attributes"),
        trimmed.alias("trimmed_attributes"),
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
        "trimmed_attributes",
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
            F.first("trimmed_attributes", ignorenulls=True).alias("trimmed_attributes"),
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
        "trimmed_attributes",
    )


def _ordered_pairs(items: Column) -> Column:
    """Every two elements of an array, in array order: ``(first, second)`` structs; an array
    of fewer than two has none."""
    size = F.size(items)
    pairs = F.flatten(
        F.transform(
            F.sequence(F.lit(0), size - 2),
            lambda i: F.transform(
                F.sequence(i + 1, size - 1),
                lambda j: F.struct(items[i].alias("first"), items[j].alias("second")),
            ),
        )
    )
    return F.when(size >= 2, pairs)


_PAIR_NAMES = ["app_id", "event_type", "attribute", "attribute2"]


def pair_sketches(
    combinations: DataFrame,
    kept: DataFrame,
    lg_k: int = DEFAULT_LG_K,
    max_pair_rows: int = MAX_PAIR_ROWS,
) -> tuple[DataFrame, DataFrame]:
    """Pair rows and pair markers of a day.

    Pair rows: sketches per (app, event, two kept attributes' values seen on one event), for
    the attribute pairs with at most ``max_pair_rows`` value pairs that day. Markers: every two
    attributes kept that day except those over the limit (two attributes never seen on one
    event have a marker and no rows: such a leaf counts zero users).
    """
    entries = combinations.select(
        "app_id",
        "event_type",
        F.explode(_ordered_pairs(F.col("combination"))).alias("pair"),
        "theta",
        "counts",
        "events",
    ).select(
        "app_id",
        "event_type",
        F.col("pair.first.key").alias("attribute"),
        F.col("pair.first.value").alias("value"),
        F.col("pair.second.key").alias("attribute2"),
        F.col("pair.second.value").alias("value2"),
        "theta",
        "counts",
        "events",
    )
    unions = entries.groupBy(*_PAIR_NAMES, "value", "value2").agg(
        F.theta_union_agg("theta", lg_k).alias("theta"),
        F.tuple_union_agg_integer("counts", lg_k, "sum").alias("counts"),
        F.sum("events").alias("events"),
    )
    value_pairs = F.count(F.lit(1)).over(Window.partitionBy(*_PAIR_NAMES))
    counted = unions.withColumn("value_pairs", value_pairs)
    rows = counted.where(F.col("value_pairs") <= max_pair_rows).drop("value_pairs")
    too_many = counted.where(F.col("value_pairs") > max_pair_rows).select(*_PAIR_NAMES)
    markers = (
        kept.select(
            "app_id", "event_type", F.explode(_ordered_pairs(F.col("kept_attributes"))).alias("p")
        )
        .select("app_id", "event_type", F.col("p.first").alias("attribute"),
                F.col("p.second").alias("attribute2"))
        .join(too_many.distinct(), _PAIR_NAMES, "left_anti")
    )  # fmt: skip
    return rows, markers


def kept_markers(kept: DataFrame) -> DataFrame:
    """One row per (app, event type, attribute kept that day)."""
    return kept.select("app_id", "event_type", F.explode("kept_attributes").alias("attribute"))


_COLUMNS = {
    "attr_hash": "string",
    "combination": "array<struct<key:string,value:string>>",
    "attribute": "string",
    "value": "string",
    "attribute2": "string",
    "value2": "string",
    "theta": "binary",
    "counts": "binary",
    "events": "bigint",
    "kept_attributes": "array<string>",
    "trimmed_attributes": "string",
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
    events: DataFrame,
    decisions: DataFrame,
    day_text: str,
    lg_k: int = DEFAULT_LG_K,
    max_pair_rows: int = MAX_PAIR_ROWS,
) -> DataFrame:
    """Every sketch row of a day with its HBase row key (``day_text`` is ``yyyymmdd``).

    Runs the events' aggregation right away (checkpointed); the rest stays lazy.
    """
    # The kept lists feed the combinations, the empty aggregate entries and the markers.
    kept = kept_attribute_lists(decisions).localCheckpoint(eager=True)
    # Computed here, once: the aggregate and marginal rows union these (one row per
    # combination), and Spark would otherwise aggregate the events again for them.
    combinations = combination_sketches(events, kept, lg_k).localCheckpoint(eager=True)
    pairs, pair_markers = pair_sketches(combinations, kept, lg_k, max_pair_rows)
    rows = (
        _as_rows(combinations, "combination")
        .unionByName(_as_rows(union_sketches(combinations, kept, lg_k)))
        .unionByName(_as_rows(kept_markers(kept), "kept_marker"))
        .unionByName(_as_rows(pairs, "pair"))
        .unionByName(_as_rows(pair_markers, "pair_marker"))
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
        "attribute2",
        "value2",
        "theta",
        "counts",
        "events",
        F.theta_sketch_estimate("theta").alias("users_estimate"),
        "kept_attributes",
        "trimmed_attributes",
    )
