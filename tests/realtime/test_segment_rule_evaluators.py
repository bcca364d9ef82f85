"""One segment rule definition, two evaluators: the daily run's (Spark, ``segment_hits``) and the
live job's (numpy, ``lineage_updates``) put the same profiles in the same segments with the same
expiries, for any rules and any events.

The rules and events are drawn from small pools, so that near misses are frequent: a value in
another case, with a trailing space, empty, an attribute absent or null, a map absent, an app
absent. Event times are those ingest accepts (2020-2030).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from profile_store.profiles.segment_rules import DAY_MS, SegmentRule, segment_hits
from profile_store.realtime.live_events import LiveEvents
from profile_store.realtime.live_updates import lineage_updates

EVENT_TYPES = ["click", "Click", "click ", "view_item", "purchase"]
APP_IDS = ["shop", "Shop", "news"]
ATTRIBUTE_NAMES = ["product_type", "Product_type", "color"]
VALUES = ["shoes", "Shoes", "shoes ", "", "red"]
EARLIEST_MS = 1_577_836_800_000  # 2020-01-01
LATEST_MS = 1_893_456_000_000  # 2030-01-01
HALF_LIFE_MS = 7 * DAY_MS


@st.composite
def rule_sets(draw: st.DrawFn) -> tuple[SegmentRule, ...]:
    """1-4 rules: an event type, an optional app, 0-3 attribute values, a TTL."""
    count = draw(st.integers(1, 4))
    return tuple(
        SegmentRule(
            segment=f"segment_{index}",
            event_type=draw(st.sampled_from(EVENT_TYPES)),
            app_id=draw(st.none() | st.sampled_from(APP_IDS)),
            attributes=draw(
                st.integers(0, 3).flatmap(
                    lambda size: st.dictionaries(
                        st.sampled_from(ATTRIBUTE_NAMES),
                        st.sampled_from(VALUES),
                        min_size=size,
                        max_size=size,
                    )
                )
            ),
            ttl_days=draw(st.sampled_from([7, 0.5, 365]) | st.floats(0.001, 3650)),
        )
        for index in range(count)
    )


USERS = ["u1", "u2", "U1"]
NEAR_USERS = [*USERS, *(f"p{n}" for n in range(12))]
TIMES = st.integers(EARLIEST_MS, LATEST_MS)
ANY_EVENT = st.fixed_dictionaries(
    {
        "user_id": st.sampled_from(USERS),
        "event_type": st.sampled_from([*EVENT_TYPES, ""]),
        "app_id": st.none() | st.sampled_from([*APP_IDS, ""]),
        "event_ms": TIMES,
        "attributes": st.none()
        | st.dictionaries(
            st.sampled_from(ATTRIBUTE_NAMES), st.none() | st.sampled_from(VALUES), max_size=3
        ),
    }
)
NEAR_MISSES = {
    "other case": str.swapcase,
    "trailing space": lambda value: value + " ",
    "empty": lambda value: "",
    "null": lambda value: None,
}


@st.composite
def near_misses(draw: st.DrawFn, rule: SegmentRule) -> list[dict]:
    """An event matching ``rule``, and for each of its fields one event off in that field only,
    in each way of ``NEAR_MISSES`` (and for an attribute, without it; for the map, none or an
    empty one); each of its own user and time, so that another match rarely hides it."""
    app_id = rule.app_id if rule.app_id is not None else draw(st.sampled_from(APP_IDS))

    def event(**changed: object) -> dict:
        return {
            "user_id": draw(st.sampled_from(NEAR_USERS)),
            "event_type": rule.event_type,
            "app_id": app_id,
            "event_ms": draw(TIMES),
            "attributes": dict(rule.attributes),
            **changed,
        }

    events = [event(), event(attributes=None), event(attributes={})]
    for miss in NEAR_MISSES.values():
        events.append(event(event_type=miss(rule.event_type) or ""))  # never null: required
        events.append(event(app_id=miss(app_id)))
        for name, value in rule.attributes.items():
            events.append(event(attributes={**rule.attributes, name: miss(value)}))
    for name in rule.attributes:
        events.append(event(attributes={k: v for k, v in rule.attributes.items() if k != name}))
    return events


@st.composite
def rules_and_events(draw: st.DrawFn) -> tuple[tuple[SegmentRule, ...], list[dict]]:
    """Rules, the near misses of each, and a few events drawn from the pools."""
    rules = draw(rule_sets())
    events = [event for rule in rules for event in draw(near_misses(rule))]
    return rules, events + draw(st.lists(ANY_EVENT, max_size=6))


def spark_hits(spark, events: list[dict], rules: tuple[SegmentRule, ...]) -> set[tuple]:
    """What the daily run finds: (profile, segment, expiry) per profile in a segment."""
    rows = [
        (e["user_id"], e["event_type"], e["app_id"], e["event_ms"], e["attributes"]) for e in events
    ]
    frame = spark.createDataFrame(
        rows,
        "user_id string, event_type string, app_id string, event_ms long, "
        "event_attributes map<string, string>",
    ).withColumn("event_time", F.timestamp_millis("event_ms"))
    return {tuple(row) for row in segment_hits(frame, rules).collect()}


def live_hits(events: list[dict], rules: tuple[SegmentRule, ...]) -> set[tuple]:
    """What the live job finds: its cells' segments (one lineage per profile and day), the
    latest expiry of a profile's lineages winning as reads take it."""
    count = len(events)

    def column(values: list) -> np.ndarray:
        array = np.empty(count, dtype=object)
        array[:] = values
        return array

    event_ms = np.array([e["event_ms"] for e in events], dtype=np.int64)
    names = {name for rule in rules for name in rule.attributes}
    batch = LiveEvents(
        partitions=np.zeros(count, dtype=np.int32),
        offsets=np.arange(count, dtype=np.int64),
        origins=[e["user_id"] for e in events],
        event_types=column([e["event_type"] for e in events]),
        app_ids=column([e["app_id"] for e in events]),
        event_ms=event_ms,
        days=np.floor_divide(event_ms, DAY_MS),
        attributes={
            name: column([(e["attributes"] or {}).get(name) for e in events]) for name in names
        },
        keys=[()] * count,
    )
    latest: dict[tuple[str, str], int] = {}
    for lineage, cell in lineage_updates(batch, {}, rules, HALF_LIFE_MS, {0: count}).items():
        for segment, expiry in cell.segments.items():
            key = (lineage.origin, segment)
            latest[key] = max(expiry, latest.get(key, expiry))
    return {(profile, segment, expiry) for (profile, segment), expiry in latest.items()}


@settings(
    max_examples=20,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=rules_and_events())
def test_the_daily_and_the_live_evaluators_give_the_same_segments(spark, case):
    rules, events = case
    assert live_hits(events, rules) == spark_hits(spark, events, rules)
