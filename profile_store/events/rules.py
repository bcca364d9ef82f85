"""The rules a landing event keeps to enter the clean lake: one ordered table, two engines.

Ingest applies the table in Spark to a day of landing lines (``validation``); the collector
applies it with Arrow compute to a request's events (``arrow_rules``), so an event the
collector accepts is one ingest accepts, and a rejected line gets the reason the quarantine
would give it. Each rule tests one column of the parsed lines; what a line is (JSON, an
object, which keys, which JSON types) is decided by each engine's parse, and the event time by
each engine's time parse (the same ISO-8601 forms; ``tests/events/test_rule_engines.py`` runs
both over the same lines). The first rule a line breaks is its reason, in table order.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from profile_store.events.schema import ID_TYPES

WRONG_TYPE_FIELD = "wrong_type_field"  # the first field holding a value of the wrong type, or null
EVENT_TS = "event_ts"  # the parsed event time (null: unparseable)

# What a rule tests of its column (null in a column never breaks a rule, except for BLANK and
# ABSENT, which are about null).
FALSE = "false"  # a flag of the parse is false
POSITIVE = "positive"  # a count is above 0
PRESENT = "present"  # the column holds a value
BLANK = "blank"  # missing, or only spaces (Spark's ``trim``: the space character)
NOT_ONE_OF = "not_one_of"  # missing, or not one of ``values``
ABSENT = "absent"  # missing
OUTSIDE_DAY = "outside_day"  # a time outside the partition day (UTC); no day: never
OVERSIZED_MAP = "oversized_map"  # more entries, or a longer value, than ``ValidationRules`` allow
TESTS = (FALSE, POSITIVE, PRESENT, BLANK, NOT_ONE_OF, ABSENT, OUTSIDE_DAY, OVERSIZED_MAP)


@dataclass(frozen=True)
class Rule:
    """A line breaks the rule ``reason`` when ``test`` holds for its ``column``."""

    reason: str
    test: str
    column: str
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.test not in TESTS:
            raise ValueError(f"test: {self.test!r} is not one of {', '.join(TESTS)}")


RULES = (
    Rule("malformed_record", FALSE, "is_json"),  # not UTF-8 JSON
    Rule("not_an_object", FALSE, "is_object"),  # JSON, but an array, string, number ...
    Rule("unknown_field", POSITIVE, "unknown_field_count"),  # a key the contract does not name
    Rule("wrong_type", PRESENT, WRONG_TYPE_FIELD),  # a value of another JSON type
    Rule("missing_event_id", BLANK, "event_id"),
    Rule("missing_app_id", BLANK, "app_id"),
    Rule("missing_user_id", BLANK, "user_id"),
    Rule("invalid_id_type", NOT_ONE_OF, "id_type", ID_TYPES),
    Rule("empty_event_type", BLANK, "event_type"),
    Rule("unparseable_event_time", ABSENT, EVENT_TS),
    Rule("event_time_outside_day", OUTSIDE_DAY, EVENT_TS),
    Rule("oversized_attributes", OVERSIZED_MAP, "event_attributes"),
)
CONFLICTING_DUPLICATE = "conflicting_duplicate"  # an event_id already accepted with other content
REASONS = (*(rule.reason for rule in RULES), CONFLICTING_DUPLICATE)

MAX_RAW_BYTES = 1 << 30


@dataclass(frozen=True)
class ValidationRules:
    """Limits a landing row must respect to enter the clean lake."""

    max_attributes: int = 100
    max_attribute_value_length: int = 1024
    max_raw_bytes: int = 4096  # of a rejected line, kept in the quarantine (``raw_lines``)

    def __post_init__(self) -> None:
        if self.max_attributes < 1:
            raise ValueError(f"max_attributes: must be >= 1, got {self.max_attributes}")
        if self.max_attribute_value_length < 1:
            raise ValueError(
                f"max_attribute_value_length: must be >= 1, got {self.max_attribute_value_length}"
            )
        if not 4 <= self.max_raw_bytes <= MAX_RAW_BYTES:
            raise ValueError(
                f"max_raw_bytes: must be >= 4 (one character of any size) and <= {MAX_RAW_BYTES} "
                f"(1 GiB, longer than any line Spark reads), got {self.max_raw_bytes}"
            )


def day_bounds(day: date) -> tuple[datetime, datetime]:
    """The UTC half-open interval [start, end) of a partition day."""
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start, start + timedelta(days=1)
