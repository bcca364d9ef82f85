"""The rule table (``rules``) applied with Arrow compute: the collector's validation.

The columns are those ``parsed_lines`` makes of a request's lines; each rule becomes one
vectorised condition over a column, and a line's reason is the first rule it breaks, as in
Spark (``validation.spark_rule``).
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    Rule,
    ValidationRules,
    day_bounds,
)

# Spark's ``try_to_timestamp`` with its ISO-8601 offset patterns (``validation``): letters
# in either case, 1 to 3 fraction digits, ``Z`` or an offset of at most 18 hours; the date and
# time must exist (no February 30, no hour 24, no leap second).
_TIME = (
    r"^(?P<local>[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2})"
    r"(?:\.(?P<fraction>[0-9]{1,3}))?(?P<zone>[Zz]|[+-][0-9]{2}:[0-9]{2})$"
)
_MAX_OFFSET_S = 18 * 3600


def event_times(times: pa.Array) -> pa.TimestampArray:
    """``event_time`` texts as UTC instants (milliseconds); null where ingest could not parse."""
    parts = pc.extract_regex(times.cast(pa.string()), _TIME)
    local = pc.utf8_upper(pc.struct_field(parts, "local"))
    seconds = pc.strptime(local, "%Y-%m-%dT%H:%M:%S", "s", error_is_null=True)
    # Arrow rolls February 30 over into March; ingest refuses it: the text must come back.
    exists = pc.equal(pc.strftime(seconds, "%Y-%m-%dT%H:%M:%S"), local)
    fraction = pc.utf8_rpad(pc.coalesce(pc.struct_field(parts, "fraction"), ""), 3, "0")
    millis = pc.cast(fraction, pa.int64())
    zone = pc.replace_substring_regex(pc.struct_field(parts, "zone"), r"^[Zz]$", "+00:00")
    sign = pc.if_else(pc.starts_with(zone, "-"), -1, 1)
    hours = pc.cast(pc.utf8_slice_codeunits(zone, 1, 3), pa.int64())
    minutes = pc.cast(pc.utf8_slice_codeunits(zone, 4, 6), pa.int64())
    offset_s = pc.add(pc.multiply(hours, 3600), pc.multiply(minutes, 60))
    valid_zone = pc.and_(pc.less_equal(minutes, 59), pc.less_equal(offset_s, _MAX_OFFSET_S))
    instant_ms = pc.add(
        pc.multiply(pc.subtract(pc.cast(seconds, pa.int64()), pc.multiply(sign, offset_s)), 1000),
        millis,
    )
    usable = pc.and_(exists, valid_zone)
    return pc.if_else(usable, instant_ms, None).cast(pa.timestamp("ms", tz="UTC"))


def _too_long_values(entries: pa.MapArray, limit: int) -> np.ndarray:
    """Rows of a map column holding a value longer than ``limit`` characters."""
    offsets = entries.offsets.to_numpy()
    first, count = int(offsets[0]), int(offsets[-1] - offsets[0])
    values = entries.items
    if len(values) != count:  # a slice's items may be its parent's
        values = values.slice(first, count)
    long = pc.fill_null(pc.greater(pc.utf8_length(values), limit), False)
    parents = np.repeat(np.arange(len(entries)), np.diff(offsets))
    rows = np.zeros(len(entries), dtype=bool)
    rows[parents[long.to_numpy(zero_copy_only=False)]] = True
    return rows


def arrow_rule(
    rule: Rule, column: pa.Array, day: date | None, rules: ValidationRules
) -> pa.BooleanArray:
    """Where a row breaks ``rule`` (``column``: the rule's column); never null."""
    if rule.test == FALSE:
        failed = pc.invert(column)
    elif rule.test == POSITIVE:
        failed = pc.greater(column, 0)
    elif rule.test == PRESENT:
        failed = pc.is_valid(column)
    elif rule.test == BLANK:
        failed = pc.or_kleene(pc.is_null(column), pc.equal(pc.utf8_trim(column, " "), ""))
    elif rule.test == NOT_ONE_OF:
        failed = pc.invert(pc.fill_null(pc.is_in(column, pa.array(rule.values)), False))
    elif rule.test == ABSENT:
        failed = pc.is_null(column)
    elif rule.test == OUTSIDE_DAY:
        if day is None:
            return pa.array(np.zeros(len(column), dtype=bool))
        start, end = day_bounds(day)
        failed = pc.or_(pc.less(column, pa.scalar(start)), pc.greater_equal(column, end))
    elif rule.test == OVERSIZED_MAP:
        too_many = np.diff(column.offsets.to_numpy()) > rules.max_attributes  # null: no entry
        too_long = _too_long_values(column, rules.max_attribute_value_length)
        return pa.array(too_many | too_long)
    else:
        raise ValueError(f"{rule.reason}: no Arrow form for the test {rule.test!r}")
    return pc.fill_null(failed, False)


def reasons(columns: pa.Table, day: date | None, rules: ValidationRules) -> pa.StringArray:
    """The first rule each row breaks (``RULES`` order), null for a row that breaks none.

    ``columns`` holds every rule's column but ``event_ts``, which is parsed here from
    ``event_time``."""
    table = columns.append_column(EVENT_TS, event_times(columns["event_time"].combine_chunks()))
    reason = pa.nulls(len(table), pa.string())
    for rule in reversed(RULES):
        failed = arrow_rule(rule, table[rule.column].combine_chunks(), day, rules)
        reason = pc.if_else(failed, pa.scalar(rule.reason), reason)
    return reason
