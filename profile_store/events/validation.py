"""Sorting landing rows into clean events and quarantined rows, in Spark.

Every rejected row keeps a reason and its original content, so nothing is dropped silently; the
first rule a row breaks is its reason, in the order of ``REASONS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from profile_store.events.schema import CORRUPT_RECORD, EVENT_COLUMNS, ID_TYPES, SOURCE_FILE

REASONS = (
    "malformed_record",
    "missing_event_id",
    "missing_app_id",
    "missing_user_id",
    "invalid_id_type",
    "empty_event_type",
    "unparseable_event_time",
    "event_time_outside_day",
    "oversized_attributes",
)

QUARANTINED_FIELDS = ("event_id", "app_id", "user_id", "event_type", "event_time")
_TIME_FORMATS = ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "yyyy-MM-dd'T'HH:mm:ssXXX")


@dataclass(frozen=True)
class ValidationRules:
    """Limits a landing row must respect to enter the clean lake."""

    max_attributes: int = 100
    max_attribute_value_length: int = 1024

    def __post_init__(self) -> None:
        if self.max_attributes < 1:
            raise ValueError(f"max_attributes: must be >= 1, got {self.max_attributes}")
        if self.max_attribute_value_length < 1:
            raise ValueError(
                f"max_attribute_value_length: must be >= 1, got {self.max_attribute_value_length}"
            )


def day_bounds(day: date) -> tuple[datetime, datetime]:
    """The UTC half-open interval [start, end) of a partition day."""
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start, start + timedelta(days=1)


def _blank(column: str) -> Column:
    return F.col(column).isNull() | (F.trim(F.col(column)) == "")


def parse_event_time(column: Column) -> Column:
    """ISO-8601 text with a zone (``Z`` or ``+hh:mm``), with or without milliseconds, or null."""
    return F.coalesce(*[F.try_to_timestamp(column, F.lit(fmt)) for fmt in _TIME_FORMATS])


def classify(landing: DataFrame, day: date, rules: ValidationRules) -> DataFrame:
    """Landing rows plus ``event_ts`` (parsed time) and ``reason`` (null for a clean row)."""
    start, end = day_bounds(day)
    event_ts = parse_event_time(F.col("event_time"))
    attributes = F.coalesce(F.col("event_attributes"), F.create_map())
    too_long_value = F.exists(
        F.map_values(attributes), lambda v: F.length(v) > rules.max_attribute_value_length
    )
    checks: list[tuple[str, Column]] = [
        ("malformed_record", F.col(CORRUPT_RECORD).isNotNull()),
        ("missing_event_id", _blank("event_id")),
        ("missing_app_id", _blank("app_id")),
        ("missing_user_id", _blank("user_id")),
        ("invalid_id_type", ~F.coalesce(F.col("id_type").isin(*ID_TYPES), F.lit(False))),
        ("empty_event_type", _blank("event_type")),
        ("unparseable_event_time", event_ts.isNull()),
        (
            "event_time_outside_day",
            (event_ts < F.lit(start)) | (event_ts >= F.lit(end)),
        ),
        (
            "oversized_attributes",
            (F.size(attributes) > rules.max_attributes) | too_long_value,
        ),
    ]
    reason: Column = F.lit(None).cast("string")
    for name, failed in reversed(checks):
        reason = F.when(failed, F.lit(name)).otherwise(reason)
    return landing.withColumn("event_ts", event_ts).withColumn("reason", reason)


def clean_events(classified: DataFrame) -> DataFrame:
    """Rows that passed every rule, typed as the clean schema, one row per ``event_id``.

    Retries of the same event (same ``event_id``) keep the earliest; ties are broken on content
    so that re-running a day gives the same rows.
    """
    passed = classified.where(F.col("reason").isNull())
    first = Window.partitionBy("event_id").orderBy(
        "event_ts", "app_id", "user_id", "event_type", "id_type"
    )
    return (
        passed.withColumn("_rank", F.row_number().over(first))
        .where(F.col("_rank") == 1)
        .withColumn("event_time", F.col("event_ts"))
        .withColumn("event_attributes", F.coalesce("event_attributes", F.create_map()))
        .withColumn("alt_ids", F.coalesce("alt_ids", F.create_map()))
        .select(*EVENT_COLUMNS)
    )


def quarantined_rows(classified: DataFrame) -> DataFrame:
    """Rejected rows with their reason, the row as received and its landing file.

    ``raw`` is always valid UTF-8 (any Parquet reader decodes it): a line that was not has its
    invalid bytes replaced by U+FFFD there, and its exact bytes in ``raw_bytes`` (null otherwise).
    """
    derived = (CORRUPT_RECORD, "event_ts", "reason", SOURCE_FILE)
    received = [c for c in classified.columns if c not in derived]
    raw = F.coalesce(F.col(CORRUPT_RECORD), F.to_json(F.struct(*received)))
    return classified.where(F.col("reason").isNotNull()).select(
        "reason",
        *(F.make_valid_utf8(name).alias(name) for name in QUARANTINED_FIELDS),
        F.make_valid_utf8(raw).alias("raw"),
        F.when(~F.is_valid_utf8(raw), raw.cast("binary")).alias("raw_bytes"),
        SOURCE_FILE,
        F.lit(None).cast("long").alias("file_bytes"),
    )
