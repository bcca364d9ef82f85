"""Decaying counters and segment rules in Spark, against the closed forms they implement."""

from __future__ import annotations

from datetime import datetime

import pytest

from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.profiles.compaction import next_segments
from profile_store.profiles.counters import decayed_sum, event_counters
from profile_store.profiles.pipeline import segment_counts
from profile_store.profiles.segment_rules import (
    DAY_MS,
    SegmentRule,
    SegmentRuleError,
    parse_rules,
    segment_hits,
)
from profile_store.profiles.table import decayed

HOUR_MS = 3_600_000
H = 6 * HOUR_MS  # half-life of these tests
AS_OF = 1_794_009_600_000  # 2026-11-13T00:00Z


def event(user, hour, event_type="click", app="app", attributes=None):
    at = datetime.fromtimestamp((AS_OF - DAY_MS + hour * HOUR_MS) / 1000)
    return (
        f"{user}-{hour}-{event_type}",
        app,
        user,
        "gaid",
        at,
        event_type,
        attributes or {},
        None,
        {},
        None,
        None,
    )


def test_an_event_counter_is_the_sum_of_halvings_since_each_event(spark):
    events = spark.createDataFrame(
        [event("u", 0), event("u", 6), event("u", 12), event("v", 1, "view")], EVENTS_SCHEMA
    )
    got = {
        (r.profile, r.event_type): (r.value, r.last_ms)
        for r in event_counters(events, H, AS_OF).collect()
    }
    last = AS_OF - DAY_MS + 12 * HOUR_MS
    assert got[("u", "click")] == (pytest.approx(1 + 0.5 + 0.25), last)
    assert got[("v", "view")][0] == pytest.approx(1.0)


def test_merging_counters_in_any_grouping_gives_the_same_value(spark):
    parts = [
        ("u", "click", 3.0, AS_OF - 30 * HOUR_MS),
        ("u", "click", 1.0, AS_OF - 6 * HOUR_MS),
        ("u", "click", 2.0, AS_OF - 12 * HOUR_MS),
    ]
    schema = "profile string, event_type string, value double, last_ms long"
    whole = decayed_sum(spark.createDataFrame(parts, schema), ("profile", "event_type"), H, AS_OF)
    first_two = decayed_sum(
        spark.createDataFrame(parts[:2], schema), ("profile", "event_type"), H, AS_OF
    )
    staged = decayed_sum(
        first_two.unionByName(spark.createDataFrame(parts[2:], schema)),
        ("profile", "event_type"),
        H,
        AS_OF,
    )
    (a,), (b,) = whole.collect(), staged.collect()
    expected = sum(decayed(v, t, H, AS_OF - 6 * HOUR_MS) for _, _, v, t in parts)
    assert a.value == pytest.approx(expected) == pytest.approx(b.value)
    assert a.last_ms == b.last_ms == AS_OF - 6 * HOUR_MS


def test_a_counter_that_decayed_below_the_floor_is_dropped(spark):
    parts = spark.createDataFrame(
        [("u", "click", 1.0, AS_OF - 40 * H)],
        "profile string, event_type string, value double, last_ms long",
    )
    assert decayed_sum(parts, ("profile", "event_type"), H, AS_OF, floor=1e-9).count() == 0


def test_a_segment_expires_ttl_after_the_last_matching_event(spark):
    rules = parse_rules(
        [
            {
                "segment": "shoes",
                "event_type": "view",
                "attributes": {"product_type": "shoes"},
                "ttl_days": 2,
            },
            {"segment": "shop_clickers", "event_type": "click", "app_id": "shop", "ttl_days": 1},
        ]
    )
    events = spark.createDataFrame(
        [
            event("u", 1, "view", attributes={"product_type": "shoes"}),
            event("u", 5, "view", attributes={"product_type": "shoes"}),
            event("v", 2, "view", attributes={"product_type": "hats"}),
            event("w", 3, "click", app="shop"),
            event("x", 3, "click", app="news"),
        ],
        EVENTS_SCHEMA,
    )
    got = {(r.profile, r.segment): r.expiry_ms for r in segment_hits(events, rules).collect()}
    start = AS_OF - DAY_MS
    assert got == {
        ("u", "shoes"): start + 5 * HOUR_MS + 2 * DAY_MS,
        ("w", "shop_clickers"): start + 3 * HOUR_MS + DAY_MS,
    }


def test_the_segment_state_keeps_the_latest_expiry_and_drops_expired_ones(spark):
    schema = "profile string, segment string, expiry_ms long"
    previous = spark.createDataFrame([("u", "a", AS_OF + 5), ("u", "b", AS_OF + 9)], schema)
    hits = spark.createDataFrame([("u", "a", AS_OF + 7), ("v", "c", AS_OF - 1)], schema)
    got = {tuple(r) for r in next_segments(previous, hits, AS_OF).collect()}
    assert got == {("u", "a", AS_OF + 7), ("u", "b", AS_OF + 9)}


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        ([{"segment": "a b", "event_type": "x", "ttl_days": 1}], "segment 'a b'"),
        ([{"segment": "a", "event_type": "x", "ttl_days": 0}], "ttl_days"),
        ([{"segment": "a", "ttl_days": 1}], r"segment_rules\[0\]\.event_type: required"),
        ([{"segment": "a", "event_type": "x", "ttl_days": 1, "colour": "red"}], "colour"),
        (
            [
                {"segment": "a", "event_type": "x", "ttl_days": 1},
                {"segment": "a", "event_type": "y", "ttl_days": 1},
            ],
            r"segment_rules\[1\]\.segment: duplicate",
        ),
    ],
)
def test_a_bad_segment_rule_is_rejected_naming_the_field(rules, message):
    with pytest.raises(SegmentRuleError, match=message):
        parse_rules(rules)


def test_a_rule_without_app_matches_every_app():
    rule = SegmentRule(segment="clickers", event_type="click", ttl_days=7)
    assert rule.app_id is None and rule.ttl_ms == 7 * DAY_MS


def test_segment_counts_give_members_per_segment_and_profiles_with_any(spark):
    state = spark.createDataFrame(
        [("p1", "buyers", 9), ("p1", "shoppers", 9), ("p2", "shoppers", 9), ("p3", "vip", 9)],
        "profile string, segment string, expiry_ms long",
    )
    assert segment_counts(state) == ({"buyers": 1, "shoppers": 2, "vip": 1}, 3)


def test_segment_counts_of_an_empty_state_are_zero(spark):
    empty = spark.createDataFrame([], "profile string, segment string, expiry_ms long")
    assert segment_counts(empty) == ({}, 0)
