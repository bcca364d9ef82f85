"""The optional segment feed: segments decided outside the event lake (a model, a CRM export).

``segment_feed/date=D/*.jsonl`` (gzip allowed), one JSON object per line::

    {"profile": "a6f0c9", "segment": "lookalike_high", "expires_at": "2026-12-31T00:00:00Z"}

The whole day's feed is validated before anything is written: one bad line fails the
compaction with the field, the problem and the first offending lines, so a half-read feed never
reaches HBase.
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from profile_store.lake.layout import SEGMENT_FEED, day_dir
from profile_store.lake.storage import LakeStorage
from profile_store.profiles.segment_rules import SEGMENT_ID

FEED_SCHEMA = StructType(
    [
        StructField("profile", StringType()),
        StructField("segment", StringType()),
        StructField("expires_at", StringType()),
        StructField("_corrupt_record", StringType()),
    ]
)


class SegmentFeedError(ValueError):
    """A feed line is unusable; nothing of the day's feed was applied."""


def _problems(feed: DataFrame) -> DataFrame:
    expires = F.try_to_timestamp(F.col("expires_at"))
    problem = (
        F.when(F.col("_corrupt_record").isNotNull(), F.lit("line: not a JSON object"))
        .when(
            F.col("profile").isNull() | (F.trim("profile") == ""),
            F.lit("profile: missing or empty"),
        )
        .when(
            ~F.coalesce(F.col("segment").rlike(SEGMENT_ID.pattern), F.lit(False)),
            F.lit("segment: missing, or not 1-64 letters, digits, _ . -"),
        )
        .when(expires.isNull(), F.lit("expires_at: missing or not an ISO-8601 time"))
    )
    return feed.withColumn("problem", problem)


def read_segment_feed(spark: SparkSession, storage: LakeStorage, day: date) -> DataFrame:
    """The day's feed as (profile, segment, expiry_ms); empty when the day has no feed."""
    area = day_dir(SEGMENT_FEED, day)
    empty = spark.createDataFrame([], "profile string, segment string, expiry_ms long")
    if not storage.exists(area) or not storage.list_files(area):
        return empty
    feed = (
        spark.read.schema(FEED_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", "_corrupt_record")
        .json(storage.spark_uri(area))
    )
    checked = _problems(feed).cache()
    try:
        bad = checked.where(F.col("problem").isNotNull())
        count = bad.count()
        if count:
            examples = [
                f"{row.problem} ({row.profile!r}, {row.segment!r}, {row.expires_at!r})"
                for row in bad.limit(3).collect()
            ]
            raise SegmentFeedError(
                f"{area}: {count} invalid line(s), nothing applied; first: " + "; ".join(examples)
            )
        return (
            checked.select(
                "profile",
                "segment",
                F.unix_millis(F.to_timestamp("expires_at")).alias("expiry_ms"),
            )
            .groupBy("profile", "segment")
            .agg(F.max("expiry_ms").alias("expiry_ms"))
            .localCheckpoint(eager=True)
        )
    finally:
        checked.unpersist()
