"""What the accuracy check reads of its window: the clean events and each day's trim decisions."""

from __future__ import annotations

import functools
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from profile_store.audiences.attribute_stats import TRIM_DECISIONS_SCHEMA
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.lake.layout import TRIMMED_ATTRIBUTES, day_dir, events_day
from profile_store.lake.storage import LakeStorage


def window_inputs(
    spark: SparkSession, storage: LakeStorage, days: list[date]
) -> tuple[DataFrame, DataFrame]:
    """The events of ``days`` and their trim decisions, each decision with its ``date``."""
    if not days:
        raise ValueError("window_inputs: needs at least one day")
    events = spark.read.schema(EVENTS_SCHEMA).parquet(
        *[storage.spark_uri(events_day(d)) for d in days]
    )
    decisions = functools.reduce(
        DataFrame.unionByName,
        (
            spark.read.schema(TRIM_DECISIONS_SCHEMA)
            .parquet(storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, d)))
            .withColumn("date", F.lit(d.isoformat()))
            for d in days
        ),
    )
    return events, decisions
