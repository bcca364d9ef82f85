"""The event model: what arrives in the landing area and what the clean lake holds.

Landing rows are JSON objects as SDKs and collectors send them: every value is a string (the time
as ISO-8601 text) or, for the two maps, an object of strings. The clean lake has a real UTC
timestamp and maps, and nothing else changes, so a row can always be traced back to what was
received.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

SOURCE_FILE = "source_file"

ID_TYPES = ("cookie", "idfa", "gaid")

# The landing contract (``event.schema.json``, see docs/event-contract.md): these keys only,
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

# Event fields a quarantine row shows, read from the rejected line where it has them as strings.
QUARANTINED_FIELDS = ("event_id", "app_id", "user_id", "event_type", "event_time")

QUARANTINE_SCHEMA = StructType(
    [
        StructField("reason", StringType()),
        *(StructField(name, StringType()) for name in QUARANTINED_FIELDS),
        # the field and the problem, e.g. "user_id: expected a string, got boolean"
        StructField("detail", StringType()),
        # the line as received, its first max_raw_bytes (4 KiB); valid UTF-8 always (invalid
        # bytes replaced by U+FFFD)
        StructField("raw", StringType()),
        # those bytes exactly, only when the received line was not valid UTF-8
        StructField("raw_bytes", BinaryType()),
        StructField("raw_length", LongType()),  # the whole line's length in bytes
        # a cut line's distinct JSON strings of at most 128 characters, as written (ids beyond
        # the prefix, for the erasure step); null for a line kept whole
        StructField("raw_strings", ArrayType(StringType())),
        StructField("source_file", StringType()),  # the landing file of the row (or the file)
        # set only for a whole unreadable file (reason truncated_file / undecodable_file)
        StructField("file_bytes", LongType()),
    ]
)
"""``quarantine/date=D/``. Partitions written before ``raw_length`` and ``raw_strings`` existed
lack them: read with this schema, they are null there."""

QUARANTINE_COLUMNS = tuple(field.name for field in QUARANTINE_SCHEMA.fields)
