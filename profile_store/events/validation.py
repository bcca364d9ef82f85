"""Sorting landing lines into clean events and quarantined rows, in Spark.

Every rejected line keeps a reason, a detail naming the field and the problem, and the line as
received, so nothing is dropped silently; the first rule a line breaks is its reason, in the
order of ``REASONS``. Nothing is coerced: a value of the wrong JSON type is rejected
(``json_lines``).
"""

from __future__ import annotations

from datetime import date

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from profile_store.events.id_case import normalized_alt_ids, normalized_user_id
from profile_store.events.json_lines import (
    LINE,
    describe_wrong_type,
    json_type,
    typed_lines,
    unknown_fields,
)
from profile_store.events.raw_lines import kept_line
from profile_store.events.rules import (
    ABSENT,
    BLANK,
    EVENT_TS,
    FALSE,
    NOT_ONE_OF,
    OUTSIDE_DAY,
    OVERSIZED_MAP,
    POSITIVE,
    PRESENT,
    RULES,
    WRONG_TYPE_FIELD,
    Rule,
    ValidationRules,
    day_bounds,
)
from profile_store.events.schema import (
    EVENT_COLUMNS,
    ID_TYPES,
    MAP_FIELDS,
    QUARANTINED_FIELDS,
    SOURCE_FILE,
    STRING_FIELDS,
)

_TIME_FORMATS = ("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "yyyy-MM-dd'T'HH:mm:ssXXX")
COPY = "is_copy"  # an identical re-delivery of an accepted event: dropped, counted


def _outside(event_ts: Column, day: date | None) -> Column:
    if day is None:
        return F.lit(False)
    start, end = day_bounds(day)
    return (event_ts < F.lit(start)) | (event_ts >= F.lit(end))


def parse_event_time(column: Column) -> Column:
    """ISO-8601 text with a zone (``Z`` or ``+hh:mm``), with or without milliseconds, or null."""
    return F.coalesce(*[F.try_to_timestamp(column, F.lit(fmt)) for fmt in _TIME_FORMATS])


def spark_rule(rule: Rule, column: Column, day: date | None, rules: ValidationRules) -> Column:
    """The Spark condition under which a row breaks ``rule`` (``column``: the rule's column)."""
    if rule.test == FALSE:
        return ~column
    if rule.test == POSITIVE:
        return column > 0
    if rule.test == PRESENT:
        return column.isNotNull()
    if rule.test == BLANK:
        return column.isNull() | (F.trim(column) == "")
    if rule.test == NOT_ONE_OF:
        return ~F.coalesce(column.isin(*rule.values), F.lit(False))
    if rule.test == ABSENT:
        return column.isNull()
    if rule.test == OUTSIDE_DAY:
        return _outside(column, day)
    if rule.test == OVERSIZED_MAP:
        entries = F.coalesce(column, F.create_map())
        too_long_value = F.exists(
            F.map_values(entries), lambda v: F.length(v) > rules.max_attribute_value_length
        )
        return (F.size(entries) > rules.max_attributes) | too_long_value
    raise ValueError(f"{rule.reason}: no Spark form for the test {rule.test!r}")


def check_lines(lines: DataFrame, day: date | None, rules: ValidationRules) -> DataFrame:
    """Landing lines (``line``, ``source_file``) typed, plus ``event_ts`` (the parsed time) and
    ``reason`` (null for a row that breaks no rule of its own; duplicates are
    ``resolve_duplicates``' job). ``line`` is kept for rejected rows only: accepted rows are
    in the typed columns, and a day's lines are the largest thing Spark would cache.

    ``day`` None checks lines that are not yet in a day (``profiles import`` places each line in
    the day of its own time), so no line is outside its day."""
    typed = typed_lines(lines).withColumns(
        {
            # One spelling of ids whose kind ignores case, before anything compares them
            # (dedup, suppression, identity, sketches): ``id_case``.
            "user_id": normalized_user_id(F.col("user_id"), F.col("id_type")),
            "alt_ids": normalized_alt_ids(F.col("alt_ids")),
            EVENT_TS: parse_event_time(F.col("event_time")),
        }
    )
    # A line Spark read with invalid UTF-8 bytes may still parse: it is not UTF-8 JSON.
    inputs = {"is_json": F.is_valid_utf8(LINE) & F.col("is_json")}
    reason: Column = F.lit(None).cast("string")
    for rule in reversed(RULES):
        failed = spark_rule(rule, inputs.get(rule.column, F.col(rule.column)), day, rules)
        reason = F.when(failed, F.lit(rule.reason)).otherwise(reason)
    rows = typed.withColumn("reason", reason)
    return rows.withColumn(LINE, F.when(F.col("reason").isNotNull(), F.col(LINE)))


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


def repeated_event_ids(checked: DataFrame) -> DataFrame:
    """The event_ids that more than one rule-abiding row carries (usually a small share)."""
    return (
        checked.where(F.col("reason").isNull())
        .groupBy("event_id")
        .count()
        .where(F.col("count") > 1)
        .select("event_id")
    )


def resolve_duplicates(checked: DataFrame, repeated: DataFrame) -> DataFrame:
    """``checked`` plus ``is_copy``, and ``conflicting_duplicate`` where content differs.

    Of the rows sharing an event_id, the one with the earliest time, then the smallest content
    hash, is accepted whatever the file order; identical copies are dropped and counted, copies
    with other content are quarantined. Only the rows of ``repeated`` ids are ranked (a join
    with a small table, no shuffle of the day).
    """
    columns = checked.columns
    single = checked.join(F.broadcast(repeated), "event_id", "left_anti").withColumn(
        COPY, F.lit(False)
    )
    rows = checked.join(F.broadcast(repeated), "event_id", "left_semi")
    clean = F.col("reason").isNull()
    rows = rows.withColumn("_content", F.when(clean, _content_hash()))
    first = Window.partitionBy("event_id").orderBy(
        F.col("reason").isNotNull(), "event_ts", "_content"
    )
    conflicting = clean & (F.col("_content") != F.first("_content").over(first))
    ranked = rows.select(
        *[c for c in columns if c != "reason"],
        F.when(conflicting, F.lit("conflicting_duplicate"))
        .otherwise(F.col("reason"))
        .alias("reason"),
        (clean & ~conflicting & (F.row_number().over(first) > 1)).alias(COPY),
    )
    return single.select(*columns, COPY).unionByName(ranked.select(*columns, COPY))


def clean_events(classified: DataFrame) -> DataFrame:
    """Rows that passed every rule, one per ``event_id``, typed as the clean schema."""
    return (
        classified.where(F.col("reason").isNull() & ~F.col(COPY))
        .withColumn("event_time", F.col("event_ts"))
        .withColumn("event_attributes", F.coalesce("event_attributes", F.create_map()))
        .withColumn("alt_ids", F.coalesce("alt_ids", F.create_map()))
        .select(*EVENT_COLUMNS)
    )


def rejection_detail(rules: ValidationRules, day: date | None) -> Column:
    """The field and the problem, for a rejected row (evaluated for those rows only)."""
    parsed = F.try_parse_json(F.col(LINE))
    attributes = F.coalesce(F.col("event_attributes"), F.create_map())
    too_long = F.filter(
        F.map_entries(attributes), lambda e: F.length(e["value"]) > rules.max_attribute_value_length
    )
    quoted = {
        name: F.concat(F.lit('"'), F.col(name), F.lit('"')) for name in ("id_type", "event_time")
    }
    by_reason = {
        "malformed_record": F.when(~F.is_valid_utf8(LINE), F.lit("not valid UTF-8 text")).otherwise(
            F.lit("not a JSON value")
        ),
        "not_an_object": F.format_string("expected a JSON object, got %s", json_type(parsed)),
        "unknown_field": F.format_string(
            "%s: not a field of the event contract", F.array_join(unknown_fields(F.col(LINE)), ", ")
        ),
        "wrong_type": describe_wrong_type(parsed, F.col(WRONG_TYPE_FIELD)),
        "missing_event_id": F.lit("event_id: missing or blank"),
        "missing_app_id": F.lit("app_id: missing or blank"),
        "missing_user_id": F.lit("user_id: missing or blank"),
        "invalid_id_type": F.format_string(
            "id_type: %s is not one of %s",
            F.coalesce(quoted["id_type"], F.lit("missing")),
            F.lit(", ".join(ID_TYPES)),
        ),
        "empty_event_type": F.lit("event_type: missing or blank"),
        "unparseable_event_time": F.format_string(
            "event_time: %s is not ISO-8601 with a zone",
            F.coalesce(quoted["event_time"], F.lit("missing")),
        ),
        "event_time_outside_day": F.format_string(
            "event_time: %s is outside %s", F.col("event_time"), F.lit(str(day))
        ),
        "oversized_attributes": F.when(
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
    }
    detail: Column = F.lit(None).cast("string")
    for reason, text in by_reason.items():
        detail = F.when(F.col("reason") == reason, text).otherwise(detail)
    return detail


def quarantined_rows(checked: DataFrame, day: date | None, rules: ValidationRules) -> DataFrame:
    """Lines rejected on their own, with their reason, a detail naming the field and the
    problem, the line as received (its first ``max_raw_bytes``: ``raw_lines``) and its landing
    file.

    ``raw`` is always valid UTF-8 (any Parquet reader decodes it): a line that was not has its
    invalid bytes replaced by U+FFFD there, and its exact bytes in ``raw_bytes`` (null
    otherwise). The event fields are the line's own where they are strings (the typed columns
    would show a boolean as "true"), read from the whole line.
    """
    rejected = checked.where(F.col("reason").isNotNull())
    parsed = F.try_parse_json(F.col(LINE))

    def field(name: str) -> Column:
        value = F.variant_get(parsed, f"$['{name}']", "variant")
        return F.when(F.schema_of_variant(value) == "STRING", F.variant_get(value, "$", "string"))

    fields = {name: field(name) for name in QUARANTINED_FIELDS}
    # In the spelling the clean lake would hold (``raw`` keeps the line's own).
    fields["user_id"] = normalized_user_id(fields["user_id"], field("id_type"))
    return rejected.select(
        "reason",
        *(F.make_valid_utf8(value).alias(name) for name, value in fields.items()),
        F.make_valid_utf8(rejection_detail(rules, day)).alias("detail"),
        *_kept(F.col(LINE), rules),
        SOURCE_FILE,
        F.lit(None).cast("long").alias("file_bytes"),
    )


def _kept(line: Column, rules: ValidationRules) -> list[Column]:
    return [value.alias(name) for name, value in kept_line(line, rules.max_raw_bytes).items()]


def conflicting_rows(classified: DataFrame, rules: ValidationRules) -> DataFrame:
    """Rows quarantined as ``conflicting_duplicate``, in the quarantine's columns.

    Such a row was valid on its own, so its line was not kept: ``raw`` is its content as JSON
    (kept as a line is).
    """
    content = F.to_json(F.struct(*[F.col(name) for name in (*STRING_FIELDS, *MAP_FIELDS)]))
    return classified.where(F.col("reason") == "conflicting_duplicate").select(
        "reason",
        *QUARANTINED_FIELDS,
        F.format_string("event_id: %s was accepted with other content", F.col("event_id")).alias(
            "detail"
        ),
        *_kept(content, rules),
        SOURCE_FILE,
        F.lit(None).cast("long").alias("file_bytes"),
    )
