"""Bridging edges and the super-node guard, on small hand-made event sets."""

from __future__ import annotations

from datetime import date, datetime

from pyspark.sql import functions as F

from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.identity.edges import day_edges
from profile_store.identity.keys import day_keys
from profile_store.identity.rules import BridgingRules

DAY = date(2026, 11, 1)


def events(spark, rows, day: date = DAY):
    """rows: (user_id, "HH:MM", member_id, alt_ids, ip, user_agent)."""
    data = []
    for index, (user, hhmm, member, alt_ids, ip, agent) in enumerate(rows):
        hour, minute = map(int, hhmm.split(":"))
        data.append(
            (
                f"{day}-{index}",
                "app",
                user,
                "gaid",
                datetime(day.year, day.month, day.day, hour, minute),
                "session",
                {},
                member,
                alt_ids,
                ip,
                agent,
            )
        )
    return spark.createDataFrame(data, EVENTS_SCHEMA)


def edges_of(spark, rows, rules=None, history_days=()):
    """Edges and quarantine of DAY, after optional earlier days [(date, rows)]."""
    rules = rules or BridgingRules()
    keys = day_keys(events(spark, rows), rules)
    history = keys.withColumn("date", F.lit(DAY))
    for earlier, earlier_rows in history_days:
        earlier_keys = day_keys(events(spark, earlier_rows, earlier), rules)
        history = history.unionByName(earlier_keys.withColumn("date", F.lit(earlier)))
    edges, quarantine = day_edges(keys, history, DAY, rules)
    return edges.collect(), quarantine.collect()


def pairs(edges):
    return {(e.profile_a, e.profile_b) for e in edges}


def test_a_shared_member_id_is_a_star_to_its_first_seen_profile(spark):
    rows = [
        ("d1", "10:00", "m1", {}, None, None),
        ("d2", "08:00", "m1", {}, None, None),
        ("d3", "12:00", "m1", {}, None, None),
        ("d4", "09:00", "m1", {}, None, None),
    ]
    edges, quarantine = edges_of(spark, rows)
    assert pairs(edges) == {("d1", "d2"), ("d2", "d3"), ("d2", "d4")}
    assert {(e.rule, e.key_type, e.key, e.weight) for e in edges} == {
        ("member_id", "member_id", "m1", 1.0)
    }
    assert quarantine == []


def test_an_edge_is_first_seen_when_both_ends_had_the_key(spark):
    rows = [
        ("d1", "08:00", "m1", {}, None, None),
        ("d2", "09:30", "m1", {}, None, None),
        ("d2", "17:45", "m1", {}, None, None),
    ]
    (edge,), _ = edges_of(spark, rows)
    assert (edge.first_seen, edge.last_seen) == (
        datetime(2026, 11, 1, 9, 30),
        datetime(2026, 11, 1, 17, 45),
    )


def test_alt_ids_bridge_with_their_weight_and_unlisted_types_do_not(spark):
    rows = [
        ("d1", "10:00", None, {"email_sha256": "e1", "phone_sha256": "p1"}, None, None),
        ("d2", "11:00", None, {"email_sha256": "e1"}, None, None),
        ("d3", "11:00", None, {"phone_sha256": "p1"}, None, None),
    ]
    edges, _ = edges_of(spark, rows)
    assert [(e.profile_a, e.profile_b, e.rule, e.weight) for e in edges] == [
        ("d1", "d2", "alt_id", 0.95)
    ]


def test_blocklisted_values_make_no_edge_and_are_quarantined(spark):
    values = ["0", "unknown", "NULL", "", "  ", "test-user-7"]
    rows = [
        (f"d{i}{j}", "10:00", value, {}, None, None)
        for i, value in enumerate(values)
        for j in range(3)
    ]
    rules = BridgingRules(blocklist_patterns=(r"test-user-\d+",))
    edges, quarantine = edges_of(spark, rows, rules)
    assert edges == []
    assert sorted((q.key, q.reason, q.profiles) for q in quarantine) == sorted(
        (value, "blocklist", 3) for value in values
    )


def test_a_key_on_more_profiles_than_the_limit_is_a_quarantined_super_node(spark):
    rows = [(f"d{i}", "10:00", "guest", {}, None, None) for i in range(5)]
    rows += [("a", "10:00", "m1", {}, None, None), ("b", "11:00", "m1", {}, None, None)]
    edges, quarantine = edges_of(spark, rows, BridgingRules(max_profiles_per_key=4))
    assert pairs(edges) == {("a", "b")}
    assert [(q.key, q.reason, q.profiles, q.revokes_edges) for q in quarantine] == [
        ("guest", "super_node", 5, False)
    ]


def test_the_super_node_limit_counts_the_whole_history_and_revokes_earlier_edges(spark):
    earlier = date(2026, 10, 31)
    yesterday = [(f"y{i:02d}", "10:00", "test", {}, None, None) for i in range(30)]
    today = [(f"t{i:02d}", "10:00", "test", {}, None, None) for i in range(30)]
    edges, quarantine = edges_of(spark, today, history_days=[(earlier, yesterday)])
    assert edges == []
    assert [
        (q.key, q.reason, q.profiles, q.profiles_before, q.revokes_edges) for q in quarantine
    ] == [("test", "super_node", 60, 30, True)]


def test_the_fuzzy_rule_is_off_by_default(spark):
    rows = [
        ("d1", "10:00", None, {}, "10.1.2.3", "UA-1"),
        ("d2", "10:05", None, {}, "10.1.2.99", "UA-1"),
    ]
    assert edges_of(spark, rows) == ([], [])


def test_the_fuzzy_rule_links_same_prefix_and_agent_inside_a_window_below_weight_one(spark):
    rows = [
        ("d1", "10:00", None, {}, "10.1.2.3", "UA-1"),
        ("d2", "10:05", None, {}, "10.1.2.99", "UA-1"),
        ("d3", "10:06", None, {}, "10.1.3.4", "UA-1"),  # other /24
        ("d4", "10:07", None, {}, "10.1.2.5", "UA-2"),  # other agent
        ("d5", "14:00", None, {}, "10.1.2.6", "UA-1"),  # other window
    ]
    edges, _ = edges_of(spark, rows, BridgingRules(fuzzy_enabled=True, fuzzy_weight=0.6))
    assert [(e.profile_a, e.profile_b, e.rule, e.weight) for e in edges] == [
        ("d1", "d2", "fuzzy_ip_ua", 0.6)
    ]
