"""A source table, mapped column by column, as landing lines in Spark: one JSON line per row.

Everything here is a Spark expression: the source is streamed by Spark's readers (CSV, Parquet,
JSON Lines; a file, a directory or a glob; local or S3), never held in Python.
"""

from __future__ import annotations

import re
from pathlib import Path

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampNTZType, TimestampType

from profile_store.events.id_case import normalized_alt_ids, normalized_user_id
from profile_store.imports.mapping import (
    ISO_8601,
    WHITESPACE,
    EventTime,
    FieldSource,
    ImportMapping,
    MappingError,
    SourceOptions,
)

LINE = "line"
DAY = "date"
OUTPUT_TIME_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
_SUFFIX_FORMATS = {
    ".csv": "csv",
    ".tsv": "csv",
    ".parquet": "parquet",
    ".jsonl": "json",
    ".ndjson": "json",
    ".json": "json",
}
_ZONE_IN_TEXT = r"(Z|[+-]\d{2}:?\d{2})$"
_ZONE_LETTERS = re.compile(r"[XxZOVz]")


def spark_path(path: str, s3_scheme: str = "s3a") -> str:
    """``s3://`` as the scheme Spark reads the bucket with; anything else as given."""
    if path.startswith("s3://"):
        return f"{s3_scheme}://" + path[len("s3://") :]
    return path


def _format_of_name(name: str) -> str | None:
    name = name.lower().removesuffix(".gz").removesuffix(".snappy")
    return next((fmt for suffix, fmt in _SUFFIX_FORMATS.items() if name.endswith(suffix)), None)


def source_format(path: str, options: SourceOptions) -> str:
    """The mapping's ``source.format``, else the file names' suffix (a local directory's files)."""
    if options.format:
        return options.format
    fmt = _format_of_name(path.rstrip("/"))
    local = Path(path)
    if fmt is None and "://" not in path and local.is_dir():
        names = sorted(p.name for p in local.iterdir() if not p.name.startswith(("_", ".")))
        formats = {_format_of_name(n) for n in names} - {None}
        fmt = formats.pop() if len(formats) == 1 else None
    if fmt is None:
        raise MappingError(
            f"source.format: cannot tell the format of {path!r} from its name; "
            "set source.format (csv, parquet or json) in the mapping"
        )
    return fmt


def _read_aligned_columns(spark: SparkSession, path: str) -> DataFrame:
    """Text whose values are separated by runs of blanks; the first line names the columns
    (repeated at the top of every file, where it is skipped)."""
    lines = spark.read.text(path).select(F.trim(F.col("value")).alias("value"))
    lines = lines.where(F.col("value") != "")
    first = lines.first()
    if first is None:
        raise MappingError(f"source: {path!r} has no lines")
    names = re.split(r"\s+", first["value"])
    values = F.split(F.col("value"), r"\s+")
    return lines.where(F.col("value") != first["value"]).select(
        *[F.get(values, i).alias(name) for i, name in enumerate(names)]
    )


def read_source(spark: SparkSession, path: str, options: SourceOptions) -> DataFrame:
    """The source as Spark reads it; CSV values stay text (``007`` stays ``007``)."""
    fmt = source_format(path, options)
    if fmt == "csv" and options.delimiter == WHITESPACE:
        return _read_aligned_columns(spark, spark_path(path))
    reader = spark.read
    if fmt == "csv":
        reader = reader.option("header", options.header).option("sep", options.delimiter)
    return reader.format(fmt).load(spark_path(path))


def _column(name: str) -> Column:
    return F.col(f"`{name}`")


def _text(source: FieldSource) -> Column:
    if source.value is not None:
        return F.lit(source.value)
    if source.column is None:
        raise ValueError("a field source names a column or a value")
    value = _column(source.column).cast("string")
    return F.concat(F.lit(source.prefix), value) if source.prefix else value


def _pattern_has_zone(pattern: str) -> bool:
    """Whether a datetime pattern reads the zone itself: a zone letter (X, x, Z, O, V or z)
    outside its quoted literals. Such times are instants; others are read in the mapping's
    zone."""
    return bool(_ZONE_LETTERS.search(re.sub(r"'[^']*'", "", pattern)))


def _in_zone(local_time: Column, zone: str) -> Column:
    """A wall-clock time in ``zone`` as the instant it names (Spark's session zone is UTC)."""
    return local_time if zone == "UTC" else F.to_utc_timestamp(local_time, zone)


def event_timestamp(source: DataFrame, spec: EventTime) -> Column:
    """The event time as an instant, null where the value does not parse."""
    column = _column(spec.column)
    data_type = source.schema[spec.column].dataType
    if isinstance(data_type, TimestampType):
        return column
    if isinstance(data_type, TimestampNTZType):
        return _in_zone(column.cast("timestamp"), spec.time_zone)
    text = column.cast("string")
    if spec.format == "epoch_seconds":
        return F.timestamp_micros((text.try_cast("double") * 1_000_000).try_cast("long"))
    if spec.format == "epoch_millis":
        return F.timestamp_millis(text.try_cast("long"))
    if spec.format == ISO_8601:
        parsed = F.try_to_timestamp(text)
        return F.when(text.rlike(_ZONE_IN_TEXT), parsed).otherwise(_in_zone(parsed, spec.time_zone))
    parsed = F.try_to_timestamp(text, F.lit(spec.format))
    return parsed if _pattern_has_zone(spec.format) else _in_zone(parsed, spec.time_zone)


def check_time_format(spark: SparkSession, spec: EventTime) -> None:
    """A Spark datetime pattern Spark refuses is a mapping error, found before any data moves."""
    if spec.format in (ISO_8601, "epoch_seconds", "epoch_millis"):
        return
    try:
        spark.range(1).select(F.try_to_timestamp(F.lit("2017-11-06"), F.lit(spec.format))).collect()
    except Exception as error:  # Spark's own message says which letter it refuses
        first_line = str(error).strip().splitlines()[0]
        raise MappingError(
            f"event_time.format: {spec.format!r} is not a Spark datetime pattern ({first_line})"
        ) from error


def _string_map(columns: dict[str, str]) -> Column | None:
    """Name -> text of a column; a null cell is no entry (the contract has no null values)."""
    if not columns:
        return None
    entries = [part for name, col in columns.items() for part in (F.lit(name), _column(col))]
    return F.map_filter(
        F.create_map(*[e if i % 2 == 0 else e.cast("string") for i, e in enumerate(entries)]),
        lambda _key, value: value.isNotNull(),
    )


def _normalized(alt_ids: Column | None) -> Column | None:
    return None if alt_ids is None else normalized_alt_ids(alt_ids)


OCCURRENCE = "_occurrence"


def with_occurrences(source: DataFrame) -> DataFrame:
    """The source with ``_occurrence``: 1, 2 ... among rows identical in every column.

    Counted by one hash aggregation over the rows' content (no sort), then each distinct row
    repeated as often as it occurred: the same multiset of rows, each copy numbered.
    """
    columns = [_column(c) for c in source.columns]
    counted = source.groupBy(*columns).agg(F.count(F.lit(1)).alias("_copies"))
    return counted.select(
        *columns, F.explode(F.sequence(F.lit(1), F.col("_copies"))).alias(OCCURRENCE)
    )


def derived_event_id(source_columns: list[str]) -> Column:
    """A stable id from the row itself: the hash of its content and its occurrence number.

    Identical rows (two clicks in one second) stay two events (``...-1``, ``...-2``); the same
    source imported again gives the same ids, whatever its file order or splits.
    """
    content = F.sha2(F.to_json(F.struct(*[_column(c) for c in source_columns])), 256)
    return F.concat(F.substring(content, 1, 32), F.lit("-"), F.col(OCCURRENCE).cast("string"))


def landing_lines(source: DataFrame, mapping: ImportMapping) -> DataFrame:
    """``line`` (the event as a landing JSON line) and ``date`` (its UTC day, null when the
    time does not parse: such a line keeps the source's text as its event time)."""
    mapping.check_columns(source.columns)
    source_columns = source.columns
    if mapping.event_id is None:
        source = with_occurrences(source)
    event_ts = event_timestamp(source, mapping.event_time)
    raw_time = _column(mapping.event_time.column).cast("string")
    fields = {
        "event_id": (
            _text(mapping.event_id) if mapping.event_id else derived_event_id(source_columns)
        ),
        "app_id": _text(mapping.app_id),
        # One spelling of ids whose kind ignores case, as ingest writes them (``id_case``).
        "user_id": normalized_user_id(_text(mapping.user_id), _text(mapping.id_type)),
        "id_type": _text(mapping.id_type),
        "event_time": F.coalesce(F.date_format(event_ts, OUTPUT_TIME_FORMAT), raw_time),
        "event_type": _text(mapping.event_type),
        "event_attributes": _string_map(mapping.attributes),
        "member_id": _text(mapping.member_id) if mapping.member_id else None,
        "alt_ids": _normalized(_string_map(mapping.alt_ids)),
        "ip": _column(mapping.ip).cast("string") if mapping.ip else None,
        "user_agent": _column(mapping.user_agent).cast("string") if mapping.user_agent else None,
    }
    # to_json leaves out null fields: an absent optional field, as the contract allows.
    event = F.struct(*[value.alias(name) for name, value in fields.items() if value is not None])
    return source.select(F.to_json(event).alias(LINE), F.to_date(event_ts).alias(DAY))
