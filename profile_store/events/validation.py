"""Sorting landing lines into clean events and quarantined rows, in Spark.

Every rejected line keeps a reason, a detail naming the field and the problem, and the line as
received, so nothing is dropped silently; the first rule a line breaks is its reason, in the
order of ``REASONS``. Nothing is coerced: a value of the wrong JSON type is rejected
(``json_lines``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from profile_store.events.json_lines import LINE, TYPE_ERROR, json_type, typed_lines, unknown_fields
from profile_store.events.schema import EVENT_COLUMNS, ID_TYPES, SOURCE_FILE

REASONS = (
    "malformed_record",  # not JSON
    "not_an_object",  # JSON, but an array, string, number ... (never split into events)
    "unknown_field",  # a top-level key the contract does not name
    "wrong_type",  # a value of another JSON type than the contract's
    "missing_event_id",
    "missing_app_id",
    "missing_user_id",
    "invalid_id_type",
    "empty_event_type",
    "unparseable_event_time",
    "event_time_outside_day",
    "oversized_attributes",
    "conflicting_duplicate",  # an event_id already accepted with other content
)

QUARANTINED_FIELDS = ("event_id", "app_id", "user_id", "event_type", "event_time")
_TIME_FORMATS = ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "yyyy-MM-dd'T'HH:mm:ssXXX")
COPY = "is_copy"  # an identical re-delivery of an accepted event: dropped, counted


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


def _first_failure(checks: list[tuple[str, Column, Column]]) -> tuple[Column, Column]:
    """The reason and detail of the first check that fails (nulls when none does)."""
    reason: Column = F.lit(None).cast("string")
    detail: Column = F.lit(None).cast("string")
    for name, failed, why in reversed(checks):
        reason = F.when(failed, F.lit(name)).otherwise(reason)
        detail = F.when(failed, why).otherwise(detail)
    return reason, detail


def classify(lines: DataFrame, day: date, rules: ValidationRules) -> DataFrame:
    """Landing lines (``line``, ``source_file``) typed, plus ``event_ts`` (the parsed time),
    ``reason`` and ``detail`` (nulls for a clean row) and ``is_copy`` (an identical
    re-delivery of a clean row).

    Of the rows sharing an event_id, the one with the earliest time, then the smallest content
    hash, is accepted whatever the file order; identical copies are dropped and counted,
    copies with other content are quarantined as ``conflicting_duplicate``.
    """
    start, end = day_bounds(day)
    typed = typed_lines(lines)
    event_ts = parse_event_time(F.col("event_time"))
    attributes = F.coalesce(F.col("event_attributes"), F.create_map())
    too_long = F.filter(
        F.map_entries(attributes), lambda e: F.length(e["value"]) > rules.max_attribute_value_length
    )

    def missing(name: str) -> tuple[Column, Column]:
        return _blank(name), F.lit(f"{name}: missing or blank")

    checks: list[tuple[str, Column, Column]] = [
        ("malformed_record", ~F.is_valid_utf8(LINE), F.lit("not valid UTF-8 text")),
        ("malformed_record", ~F.col("is_json"), F.lit("not a JSON value")),
        ("not_an_object", ~F.col("is_object"), F.lit("expected a JSON object")),
        (
            "unknown_field",
            F.col("unknown_field_count") > 0,
            F.lit("a field the event contract does not name"),
        ),
        ("wrong_type", F.col(TYPE_ERROR).isNotNull(), F.col(TYPE_ERROR)),
        ("missing_event_id", *missing("event_id")),
        ("missing_app_id", *missing("app_id")),
        ("missing_user_id", *missing("user_id")),
        (
            "invalid_id_type",
            ~F.coalesce(F.col("id_type").isin(*ID_TYPES), F.lit(False)),
            F.format_string(
                "id_type: %s is not one of %s",
                F.coalesce(F.concat(F.lit('"'), "id_type", F.lit('"')), F.lit("missing")),
                F.lit(", ".join(ID_TYPES)),
            ),
        ),
        ("empty_event_type", *missing("event_type")),
        (
            "unparseable_event_time",
            event_ts.isNull(),
            F.format_string(
                "event_time: %s is not ISO-8601 with a zone",
                F.coalesce(F.concat(F.lit('"'), "event_time", F.lit('"')), F.lit("missing")),
            ),
        ),
        (
            "event_time_outside_day",
            (event_ts < F.lit(start)) | (event_ts >= F.lit(end)),
            F.format_string("event_time: %s is outside %s", F.col("event_time"), F.lit(str(day))),
        ),
        (
            "oversized_attributes",
            (F.size(attributes) > rules.max_attributes) | (F.size(too_long) > 0),
            F.when(
                F.size(attributes) > rules.max_attributes,
                F.format_string(
                    "event_attributes: %d entries (limit %d)",
                    F.size(attributes),
                    F.lit(rules.max_attributes),
                ),
            ).otherwise(
                F.format_string(
                    "event_attributes.%s: %d characters (limit %d)",
                    too_long[0]["key"],
                    F.length(too_long[0]["value"]),
                    F.lit(rules.max_attribute_value_length),
                )
            ),
        ),
    ]
    reason, detail = _first_failure(checks)
    rows = typed.withColumn("event_ts", event_ts).select(
        "*", reason.alias("reason"), detail.alias("detail")
    )
    return _sort_out_duplicates(rows)


def _content_hash() -> Column:
    """A hash of what the row says (maps as sorted entries), not of how the line spelt it."""
    return F.xxhash64(
        "app_id",
        "user_id",
        "id_type",
        "event_ts",
        "event_type",
        F.array_sort(F.map_entries(F.coalesce("event_attributes", F.create_map()))),
        "member_id",
        F.array_sort(F.map_entries(F.coalesce("alt_ids", F.create_map()))),
        "ip",
        "user_agent",
    )


def _sort_out_duplicates(rows: DataFrame) -> DataFrame:
    clean = F.col("reason").isNull()
    content = _content_hash()
    rows = rows.withColumn("_content", F.when(clean, content))
    first = Window.partitionBy("event_id").orderBy(
        F.col("reason").isNotNull(), "event_ts", "_content"
    )
    winner = F.first("_content").over(first)
    position = F.row_number().over(first)
    conflicting = clean & (F.col("_content") != winner)
    return (
        rows.withColumn("_winner", winner)
        .withColumn("_position", position)
        .select(
            *[c for c in rows.columns if c not in ("reason", "detail", "_content")],
            F.when(conflicting, F.lit("conflicting_duplicate"))
            .otherwise(F.col("reason"))
            .alias("reason"),
            F.when(
                conflicting,
                F.format_string("event_id: %s was accepted with other content", F.col("event_id")),
            )
            .otherwise(F.col("detail"))
            .alias("detail"),
            (clean & ~conflicting & (F.col("_position") > 1)).alias(COPY),
        )
    )


def clean_events(classified: DataFrame) -> DataFrame:
    """Rows that passed every rule, one per ``event_id``, typed as the clean schema."""
    return (
        classified.where(F.col("reason").isNull() & ~F.col(COPY))
        .withColumn("event_time", F.col("event_ts"))
        .withColumn("event_attributes", F.coalesce("event_attributes", F.create_map()))
        .withColumn("alt_ids", F.coalesce("alt_ids", F.create_map()))
        .select(*EVENT_COLUMNS)
    )


def quarantined_rows(classified: DataFrame) -> DataFrame:
    """Rejected lines with their reason, detail, the line as received and its landing file.

    ``raw`` is always valid UTF-8 (any Parquet reader decodes it): a line that was not has its
    invalid bytes replaced by U+FFFD there, and its exact bytes in ``raw_bytes`` (null
    otherwise). The event fields are the line's own where they are strings.
    """
    rejected = classified.where(F.col("reason").isNotNull())
    parsed = F.try_parse_json(F.col(LINE))

    def field(name: str) -> Column:
        value = F.variant_get(parsed, f"$['{name}']", "variant")
        return F.when(json_type(value) == "string", F.variant_get(value, "$", "string"))

    detail = (
        F.when(
            F.col("reason") == "not_an_object",
            F.format_string("expected a JSON object, got %s", json_type(parsed)),
        )
        .when(
            F.col("reason") == "unknown_field",
            F.format_string(
                "%s: not a field of the event contract",
                F.array_join(unknown_fields(F.col(LINE)), ", "),
            ),
        )
        .otherwise(F.col("detail"))
    )
    return rejected.select(
        "reason",
        *(F.make_valid_utf8(field(name)).alias(name) for name in QUARANTINED_FIELDS),
        F.make_valid_utf8(detail).alias("detail"),
        F.make_valid_utf8(LINE).alias("raw"),
        F.when(~F.is_valid_utf8(LINE), F.col(LINE).cast("binary")).alias("raw_bytes"),
        SOURCE_FILE,
        F.lit(None).cast("long").alias("file_bytes"),
    )
