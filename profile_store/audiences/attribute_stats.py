"""Per-day statistics of event attributes, and the keep/trim decision over a trailing window.

The rule: an attribute is worth a sketch dimension when it has few distinct values
(<= 100) that repeat (distinct / appearances < 0.1). The ratio tells an id-like attribute from a
category only once an app has events enough: in a small app a 10-value attribute seen 50 times
has a ratio of 0.2. So an attribute of at most ``few_values`` (20) distinct values is kept
whatever its ratio: it cannot identify events, and the ratio only rejects it where the app has
fewer than 10 events per value in the window, so its combination rows number fewer than those
events. Deciding over a trailing window (7 days by
default) instead of one day keeps the kept set from flapping between days. Distinct values are
counted with HLL sketches so that days merge without re-reading events; below a few thousand
values the HLL is in its exact (list/set) modes, so the threshold of 100 is decided exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

HLL_LG_K = 12

_KEY_FIELDS = [
    StructField("app_id", StringType()),
    StructField("event_type", StringType()),
    StructField("attribute", StringType()),
]
ATTRIBUTE_STATS_SCHEMA = StructType(
    [
        *_KEY_FIELDS,
        StructField("appearances", LongType()),
        StructField("values_hll", BinaryType()),
        StructField("distinct_values", LongType()),
    ]
)
"""What ``daily_attribute_stats`` writes: read back with it, Spark need not infer it (a job)."""
TRIM_DECISIONS_SCHEMA = StructType(
    [
        *_KEY_FIELDS,
        StructField("appearances", LongType()),
        StructField("distinct_values", LongType()),
        StructField("days_seen", LongType()),
        StructField("kept", BooleanType()),
        StructField("trim_reason", StringType()),
        StructField("window_days", IntegerType()),
        StructField("max_distinct", IntegerType()),
        StructField("max_distinct_ratio", DoubleType()),
        StructField("few_values", IntegerType()),
    ]
)
"""What ``trim_decisions`` writes (``trimmed_attributes``), for its readers."""


@dataclass(frozen=True)
class TrimRule:
    """Keep an attribute when distinct <= ``max_distinct`` and either distinct/appearances <
    ``max_distinct_ratio`` or distinct <= ``few_values``."""

    max_distinct: int = 100
    max_distinct_ratio: float = 0.1
    window_days: int = 7
    few_values: int = 20

    def __post_init__(self) -> None:
        if self.max_distinct < 1:
            raise ValueError(f"max_distinct: must be >= 1, got {self.max_distinct}")
        if not 0 < self.max_distinct_ratio <= 1:
            raise ValueError(
                f"max_distinct_ratio: must be in (0, 1], got {self.max_distinct_ratio}"
            )
        if self.window_days < 1:
            raise ValueError(f"window_days: must be >= 1, got {self.window_days}")
        if self.few_values < 0:
            raise ValueError(f"few_values: must be >= 0, got {self.few_values}")


def daily_attribute_stats(events: DataFrame) -> DataFrame:
    """(app_id, event_type, attribute) -> appearances, distinct_values, values_hll.

    Events without attributes count under a null attribute, so that every (app, event type)
    seen on the day is listed even when it never carries an attribute.
    """
    pairs = events.select(
        "app_id", "event_type", F.explode_outer("event_attributes").alias("attribute", "value")
    )
    return (
        pairs.groupBy("app_id", "event_type", "attribute")
        .agg(
            F.count(F.lit(1)).alias("appearances"),
            F.hll_sketch_agg("value", HLL_LG_K).alias("values_hll"),
        )
        .withColumn("distinct_values", F.hll_sketch_estimate("values_hll"))
    )


def trim_decisions(window_stats: DataFrame, rule: TrimRule, days_in_window: int) -> DataFrame:
    """Merge the window's daily stats and decide, per (app, event, attribute), keep or trim.

    ``window_stats`` holds the daily stats of every day in the window, with a ``date`` column;
    ``days_in_window``: how many days it holds (fewer than the rule's window near the lake's
    first day), recorded as ``window_days`` so that a refusal says what was measured.
    The null-attribute rows (events without attributes) are carried along, never kept: they
    say which (app, event type) pairs the window has seen. A trimmed attribute carries the
    limit it crossed (``trim_reason``: ``too_many_values`` or ``values_too_distinct``) and the
    rule beside it, so that a refused filter can say exactly why.
    """
    merged = window_stats.groupBy("app_id", "event_type", "attribute").agg(
        F.sum("appearances").alias("appearances"),
        F.hll_union_agg("values_hll", True).alias("values_hll"),
        F.countDistinct("date").alias("days_seen"),
    )
    distinct = F.hll_sketch_estimate("values_hll")
    keep = (
        F.col("attribute").isNotNull()
        & (distinct <= rule.max_distinct)
        & (
            (distinct / F.col("appearances") < rule.max_distinct_ratio)
            | (distinct <= rule.few_values)
        )
    )
    reason = (
        F.when(F.col("attribute").isNull() | keep, F.lit(None).cast("string"))
        .when(distinct > rule.max_distinct, F.lit("too_many_values"))
        .otherwise(F.lit("values_too_distinct"))
    )
    return merged.select(
        "app_id",
        "event_type",
        "attribute",
        "appearances",
        distinct.alias("distinct_values"),
        "days_seen",
        keep.alias("kept"),
        reason.alias("trim_reason"),
        F.lit(days_in_window).alias("window_days"),
        F.lit(rule.max_distinct).alias("max_distinct"),
        F.lit(rule.max_distinct_ratio).alias("max_distinct_ratio"),
        F.lit(rule.few_values).alias("few_values"),
    )
