"""A person's compacted rows and who is rewritten, from the profile state over two days: what
merging every part of a person in one shuffle must keep."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from profile_store.profiles.compaction import (
    compacted_rows,
    members_to_rewrite,
    next_counters,
    next_segments,
)
from profile_store.profiles.segment_rules import DAY_MS
from profile_store.profiles.table import decayed

H = DAY_MS  # half-life of these tests
DAY_1_END = 1_794_009_600_000  # 2026-11-13T00:00Z
DAY_2_END = DAY_1_END + DAY_MS
SEGMENTS = "profile string, segment string, expiry_ms long"
COUNTERS = "profile string, event_type string, value double, last_ms long"
HISTORY = "profile string, id_type string, first_seen timestamp"
ASSIGNMENT = "profile string, master string, size long"
MEMBERS = "profile string, master string, devices long"


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


@pytest.fixture
def two_days(spark):
    """p1 and p2 are one person (master p1); q is alone. Day 1: p1 earns ``buyers`` (rule
    one, expiring in day 2) and clicks; p2 earns ``shoes`` (rule two) and views. Day 2: p2
    earns ``buyers`` again, later, and clicks; p1's day-1 ``buyers`` has expired by then."""
    day_1_hits = spark.createDataFrame(
        [("p1", "buyers", DAY_1_END + DAY_MS // 2), ("p2", "shoes", DAY_2_END + 5 * DAY_MS)],
        SEGMENTS,
    )
    day_2_hits = spark.createDataFrame([("p2", "buyers", DAY_2_END + 3 * DAY_MS)], SEGMENTS)
    day_1_events = spark.createDataFrame(
        [("p1", "click", 1.0, DAY_1_END - 1000), ("p2", "view", 1.0, DAY_1_END - 2000)], COUNTERS
    )
    day_2_events = spark.createDataFrame([("p2", "click", 1.0, DAY_2_END - 3000)], COUNTERS)
    segments = next_segments(next_segments(None, day_1_hits, DAY_1_END), day_2_hits, DAY_2_END)
    counters = next_counters(
        next_counters(None, day_1_events, H, DAY_1_END), day_2_events, H, DAY_2_END
    )
    history = spark.createDataFrame(
        [
            ("p1", "idfa", at(DAY_1_END - 500)),
            ("p1", "gaid", at(DAY_1_END - 9000)),
            ("p2", "email", at(DAY_1_END - 5000)),
            ("q", "gaid", at(DAY_1_END - 100)),
        ],
        HISTORY,
    )
    members = spark.createDataFrame([("p1", "p1", 2), ("p2", "p1", 2), ("q", "q", 1)], MEMBERS)
    rows = compacted_rows(members, history, segments, counters, H, DAY_2_END, max_associations=5)
    return {row.profile: row for row in rows.collect()}


def test_every_id_of_a_person_carries_the_latest_expiry_of_each_live_segment(two_days):
    expected = {"buyers": DAY_2_END + 3 * DAY_MS, "shoes": DAY_2_END + 5 * DAY_MS}
    assert two_days["p1"].segments == expected == two_days["p2"].segments
    assert two_days["q"].segments == {}


def test_every_id_of_a_person_carries_the_persons_counters_decayed_and_merged(two_days):
    p1_click = decayed(1.0, DAY_1_END - 1000, H, DAY_2_END - 3000) + 1.0
    for profile in ("p1", "p2"):
        counters = two_days[profile].counters
        assert counters["click"]["value"] == pytest.approx(p1_click)
        assert counters["click"]["last_ms"] == DAY_2_END - 3000
        assert counters["view"]["value"] == pytest.approx(1.0)
        assert counters["view"]["last_ms"] == DAY_1_END - 2000
    assert two_days["q"].counters is None


def test_each_id_keeps_its_own_first_seen_id_type_and_lists_the_others_oldest_first(two_days):
    p1, p2, q = two_days["p1"], two_days["p2"], two_days["q"]
    assert (p1.id_type, p1.first_seen_ms, p1.devices) == ("gaid", DAY_1_END - 9000, 2)
    assert (p2.id_type, p2.first_seen_ms, p2.master) == ("email", DAY_1_END - 5000, "p1")
    assert [(a.profile, a.id_type) for a in p1.associations] == [("p2", "email")]
    assert [(a.profile, a.id_type) for a in p2.associations] == [("p1", "gaid")]
    assert (q.master, q.devices, q.associations) == ("q", 1, [])


def _rewritten(members) -> dict[str, tuple]:
    return {row.profile: (row.master, row.devices, row.changed) for row in members.collect()}


def test_an_id_moving_to_another_person_rewrites_both_persons_and_nobody_else(spark):
    before = spark.createDataFrame(
        [("a", "a", 2), ("m", "a", 2), ("b", "b", 1), ("c", "c", 2), ("d", "c", 2)], ASSIGNMENT
    )
    after = spark.createDataFrame(
        [("a", "a", 1), ("m", "b", 2), ("b", "b", 2), ("c", "c", 2), ("d", "c", 2)], ASSIGNMENT
    )
    touched = spark.createDataFrame([], "profile string")
    members = members_to_rewrite(touched, after, before)
    assert _rewritten(members) == {
        "a": ("a", 1, True),
        "m": ("b", 2, True),
        "b": ("b", 2, True),
    }


def test_a_touched_id_rewrites_its_whole_person_and_an_unlinked_one_alone(spark):
    assignment = spark.createDataFrame(
        [("a", "a", 3), ("x", "a", 3), ("y", "a", 3), ("c", "c", 1)], ASSIGNMENT
    )
    touched = spark.createDataFrame([("y",), ("y",), ("new",)], "profile string")
    members = members_to_rewrite(touched, assignment, assignment)
    assert _rewritten(members) == {
        "a": ("a", 3, False),
        "x": ("a", 3, False),
        "y": ("a", 3, True),
        "new": ("new", 1, True),
    }


def test_an_id_gone_from_the_assignment_is_rewritten_alone(spark):
    before = spark.createDataFrame([("a", "a", 2), ("z", "a", 2)], ASSIGNMENT)
    after = spark.createDataFrame([("a", "a", 1)], ASSIGNMENT)
    touched = spark.createDataFrame([], "profile string")
    assert _rewritten(members_to_rewrite(touched, after, before)) == {
        "a": ("a", 1, True),
        "z": ("z", 1, True),
    }


def test_without_an_earlier_assignment_every_person_is_rewritten(spark):
    assignment = spark.createDataFrame([("a", "a", 2), ("x", "a", 2)], ASSIGNMENT)
    touched = spark.createDataFrame([("solo",)], "profile string")
    members = members_to_rewrite(touched, assignment, every_component=True)
    assert _rewritten(members) == {
        "a": ("a", 2, True),
        "x": ("a", 2, True),
        "solo": ("solo", 1, True),
    }
