"""The event model: what arrives in the landing area and what the clean lake holds.

Landing rows are JSON objects as SDKs and collectors send them: every value is a string (the time
as ISO-8601 text) or, for the two maps, an object of strings. The clean lake has a real UTC
timestamp and maps, and nothing else changes, so a row can always be traced back to what was
received.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql.types import (
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SOURCE_FILE = "source_file"

ID_TYPES = ("cookie", "idfa", "gaid")

# The landing contract (``event.schema.json``, published in the README): these keys only,
# each a JSON string, or an object of strings for the two maps; the first six are required.
REQUIRED_FIELDS = ("event_id", "app_id", "user_id", "id_type", "event_time", "event_type")
STRING_FIELDS = (*REQUIRED_FIELDS, "member_id", "ip", "user_agent")
MAP_FIELDS = ("event_attributes", "alt_ids")
JSON_SCHEMA_FILE = Path(__file__).with_name("event.schema.json")

_STRING_MAP = MapType(StringType(), StringType())

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
    "detail",  # the field and the problem, e.g. "user_id: expected a string, got boolean"
    "raw",  # valid UTF-8 always (invalid bytes replaced by U+FFFD)
    "raw_bytes",  # the exact bytes, only when the received line was not valid UTF-8
    "source_file",  # the landing file the row (or the unreadable file) came from
    "file_bytes",  # set only for a whole unreadable file (reason truncated/undecodable_file)
)
