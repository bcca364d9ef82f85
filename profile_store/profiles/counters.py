"""Decaying event counters: an exponential moving average per event type.

Each event adds 1, and every value halves every ``half_life_ms``. A counter is stored as its
value at the time of its last event, ``(value, last_ms)``; its value at a later time ``t`` is
``value * 2 ** (-(t - last_ms) / half_life_ms)``. Merging is decaying every part to the latest
time and adding, which is commutative and associative: days, partitions and the profiles of a
person can be merged in any order and any grouping with the same result.

In Spark a merge is one aggregation. The sum is taken relative to a reference time ``as_of``
at or after every part (so each exponent is <= 0 and nothing overflows), then moved to the
latest part's time.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

COUNTER_COLUMNS = ("value", "last_ms")


FLOOR = 1e-9
"""A counter that has decayed below this by the as-of time is dropped: the state stays bounded."""


def _checked(half_life_ms: int) -> float:
    if half_life_ms <= 0:
        raise ValueError(f"half_life_ms must be positive, got {half_life_ms}")
    return float(half_life_ms)


def value_as_of(half_life_ms: int, as_of_ms: int) -> Column:
    """The aggregate of a merge: the sum of the parts (``value``, ``last_ms``) decayed to
    ``as_of_ms``, which must not be before any part's ``last_ms``."""
    h = _checked(half_life_ms)
    return F.sum(F.col("value") * F.pow(F.lit(2.0), (F.col("last_ms") - F.lit(as_of_ms)) / h))


def value_at_last(
    value_as_of: Column | str, last_ms: Column | str, half_life_ms: int, as_of_ms: int
) -> Column:
    """A merged counter's value at its latest part's time (``last_ms``, the max of the parts')
    from its value at ``as_of_ms``."""
    h = _checked(half_life_ms)
    return _column(value_as_of) * F.pow(F.lit(2.0), (F.lit(as_of_ms) - _column(last_ms)) / h)


def _column(column: Column | str) -> Column:
    return F.col(column) if isinstance(column, str) else column


def decayed_sum(
    parts: DataFrame,
    keys: Sequence[str],
    half_life_ms: int,
    as_of_ms: int,
    floor: float = FLOOR,
) -> DataFrame:
    """Merge counter parts (``keys``, ``value``, ``last_ms``) into one counter per key.

    ``as_of_ms`` must not be before any part's ``last_ms``. Counters that have decayed below
    ``floor`` by ``as_of_ms`` are dropped, which keeps the state from growing forever.
    """
    merged = parts.groupBy(*keys).agg(
        value_as_of(half_life_ms, as_of_ms).alias("value_as_of"),
        F.max("last_ms").alias("last_ms"),
    )
    return merged.where(F.col("value_as_of") >= F.lit(floor)).select(
        *keys,
        value_at_last("value_as_of", "last_ms", half_life_ms, as_of_ms).alias("value"),
        "last_ms",
    )


def event_counters(events: DataFrame, half_life_ms: int, as_of_ms: int) -> DataFrame:
    """Per (profile, event_type): the decaying count of the events, as of its last event."""
    parts = events.select(
        F.col("user_id").alias("profile"),
        "event_type",
        F.lit(1.0).alias("value"),
        F.unix_millis("event_time").alias("last_ms"),
    )
    return decayed_sum(parts, ("profile", "event_type"), half_life_ms, as_of_ms)
