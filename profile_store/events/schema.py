"""The event model: what arrives in the landing area and what the clean lake holds.

Landing rows are JSON as SDKs and collectors send them: every scalar is a string and the time is
ISO-8601 text. The clean lake has a real UTC timestamp and maps, and nothing else changes, so a
row can always be traced back to what was received.
"""

from __future__ import annotations

from pyspark.sql.types import (
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

CORRUPT_RECORD = "_corrupt_record"
SOURCE_FILE = "source_file"

ID_TYPES = ("cookie", "idfa", "gaid")

_STRING_MAP = MapType(StringType(), StringType())

LANDING_SCHEMA = StructType(
    [
        StructField("event_id", StringType()),
        StructField("app_id", StringType()),
        StructField("user_id", StringType()),
        StructField("id_type", StringType()),
        StructField("event_time", StringType()),
        StructField("event_type", StringType()),
        StructField("event_attributes", _STRING_MAP),
        StructField("member_id", StringType()),
        StructField("alt_ids", _STRING_MAP),
        StructField("ip", StringType()),
        StructField("user_agent", StringType()),
        StructField(CORRUPT_RECORD, StringType()),
    ]
)

EVENTS_SCHEMA = StructType(
    [
        StructField("event_id", StringType(), nullable=False),
        StructField("app_id", StringType(), nullable=False),
        StructField("user_id", StringType(), nullable=False),
        StructField("id_type", StringType(), nullable=False),
        StructField("event_time", TimestampType(), nullable=False),
        StructField("event_type", StringType(), nullable=False),
        StructField("event_attributes", _STRING_MAP),
        StructField("member_id", StringType()),
        StructField("alt_ids", _STRING_MAP),
        StructField("ip", StringType()),
        StructField("user_agent", StringType()),
    ]
)

EVENT_COLUMNS = tuple(field.name for field in EVENTS_SCHEMA.fields)

QUARANTINE_COLUMNS = (
    "reason",
    "event_id",
    "app_id",
    "user_id",
    "event_type",
    "event_time",
    "raw",  # valid UTF-8 always (invalid bytes replaced by U+FFFD)
    "raw_bytes",  # the exact bytes, only when the received line was not valid UTF-8
    "source_file",  # the landing file the row (or the unreadable file) came from
    "file_bytes",  # set only for a whole unreadable file (reason truncated/undecodable_file)
)
