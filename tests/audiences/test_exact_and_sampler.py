"""The exact yardstick (Spark) and the fixed-seed query mix."""

from __future__ import annotations

from datetime import date, datetime

import numpy as np
import pytest

from profile_store.audiences.exact import (
    counted_leaves,
    exact_leaf_users,
    exact_users,
    operand_size,
)
from profile_store.audiences.query import canonical_form, leaf_identity, leaves, parse_query
from profile_store.audiences.query_sampler import (
    AskedTrees,
    CatalogEntry,
    build_catalog,
    sample_estimating_queries,
    sample_queries,
)

SCHEMA = (
    "app_id string, event_type string, user_id string, event_time timestamp, "
    "event_attributes map<string,string>"
)


@pytest.fixture
def events(spark):
    rows = []
    for day in (1, 2):
        t = datetime(2026, 11, day, 12)
        rows += [
            ("shop", "view", f"u{i}", t, {"color": "red" if i % 2 else "blue"}) for i in range(10)
        ]
        rows += [("shop", "buy", f"u{i}", t, {}) for i in range(3)]
    rows += [("shop", "buy", "u0", datetime(2026, 11, 2, 13), {})]
    return spark.createDataFrame(rows, SCHEMA)


def leaf(event, day_to=2, **extra):
    return {
        "app_id": "shop",
        "event_type": event,
        "date_from": "2026-11-01",
        "date_to": f"2026-11-0{day_to}",
        **extra,
    }


def exact_count(spark, events, tree) -> int:
    query = parse_query(tree)
    users = exact_leaf_users(spark, events, leaves(query))
    return len(exact_users(query, users))


def test_exact_leaf_counts_unique_users_over_the_range(spark, events):
    assert exact_count(spark, events, leaf("view")) == 10


def test_exact_leaf_applies_attribute_filters(spark, events):
    assert exact_count(spark, events, leaf("view", attributes={"color": "red"})) == 5


def test_exact_min_count_sums_events_over_days(spark, events):
    assert exact_count(spark, events, leaf("buy", min_count=2)) == 3
    assert exact_count(spark, events, leaf("buy", min_count=3)) == 1  # u0 bought 3 times


def test_exact_leaf_nobody_matches_is_empty_beside_others(spark, events):
    tree = {"union": [leaf("view", attributes={"color": "green"}), leaf("buy")]}
    query = parse_query(tree)
    users = exact_leaf_users(spark, events, leaves(query))
    assert sorted(len(found) for found in users.values()) == [0, 3]
    assert all(found.dtype == np.int64 for found in users.values())


def test_exact_tree_set_algebra(spark, events):
    tree = {"difference": [leaf("view", attributes={"color": "red"}), leaf("buy")]}
    assert exact_count(spark, events, tree) == 4  # odd users 1..9 minus u1


def operand(spark, events, tree) -> int:
    query = parse_query(tree)
    found = leaves(query)
    return operand_size(query, exact_leaf_users(spark, events, found + counted_leaves(found)))


def test_the_operand_of_an_intersection_is_its_larger_side(spark, events):
    assert operand(spark, events, {"intersection": [leaf("buy"), leaf("view")]}) == 10


def test_the_operand_of_a_counted_leaf_is_every_user_of_its_rows(spark, events):
    # One user bought 3 times; the sketch sampled all 3 buyers to find them.
    assert operand(spark, events, leaf("buy", min_count=3)) == 3


def test_the_operand_of_a_union_is_the_union(spark, events):
    tree = {"union": [leaf("view", attributes={"color": "red"}), leaf("buy")]}
    assert operand(spark, events, tree) == 7  # odd users 1..9 and u0, u2


def test_sampler_is_deterministic_and_parses():
    catalog = [
        CatalogEntry("shop", "view", 1000, {"color": ["red", "blue"]}),
        CatalogEntry("shop", "buy", 50, {}),
        CatalogEntry("game", "level_up", 300, {"level": ["1", "2"]}),
        CatalogEntry("game", "install", 900, {}),
    ]
    days = [date(2026, 11, d) for d in range(1, 8)]
    first = sample_queries(catalog, days, 200, seed=3)
    assert first == sample_queries(catalog, days, 200, seed=3)
    assert first != sample_queries(catalog, days, 200, seed=4)
    parsed = [parse_query(q) for q in first]
    operators = {getattr(p, "operator", "leaf") for p in parsed}
    assert operators == {"leaf", "union", "intersection", "difference"}
    all_leaves = [x for p in parsed for x in leaves(p)]
    assert any(x.min_count for x in all_leaves) and any(x.attributes for x in all_leaves)
    assert all(days[0] <= x.date_from <= x.date_to <= days[-1] for x in all_leaves)


def test_the_mix_has_intersections_and_differences_of_small_one_day_sets():
    catalog = [
        CatalogEntry("shop", "view", 1000, {"color": ["red", "blue"]}),
        CatalogEntry("shop", "buy", 50, {}),
        CatalogEntry("shop", "refund", 5, {}),
    ]
    days = [date(2026, 11, d) for d in range(1, 8)]
    small = [
        tree
        for tree in sample_queries(catalog, days, 200, seed=3)
        for operator in ("intersection", "difference")
        if operator in tree
        and all(leaf.get("date_from", 0) == leaf.get("date_to") for leaf in tree[operator])
        and all(leaf.get("attributes") or leaf.get("min_count") for leaf in tree[operator])
    ]
    assert small
    named = {leaf["event_type"] for tree in small for op in tree.values() for leaf in op}
    assert "view" not in named  # the smaller half of the event types


ESTIMATING_CATALOG = [
    CatalogEntry("shop", "view", 90_000, {"color": ["red", "blue"]}),
    CatalogEntry("shop", "buy", 800, {}),
    CatalogEntry("shop", "refund", 5, {}),
    CatalogEntry("game", "level_up", 300, {"level": ["1", "2"]}),
]


def test_sought_trees_each_read_an_estimating_pair():
    days = [date(2026, 11, d) for d in range(1, 8)]
    trees = sample_estimating_queries(ESTIMATING_CATALOG, {("shop", "view")}, days, 100, seed=3)
    for tree in trees:
        named = [(x.app_id, x.event_type) for x in leaves(parse_query(tree))]
        assert ("shop", "view") in named
        assert {app for app, _ in named} == {"shop"}  # operands of one app share users
    assert {next(iter(tree)) for tree in trees} >= {"union", "intersection", "difference"}


def test_sought_trees_are_deterministic_for_a_seed():
    days = [date(2026, 11, d) for d in range(1, 8)]
    estimating = {("shop", "view")}
    first = sample_estimating_queries(ESTIMATING_CATALOG, estimating, days, 50, seed=3)
    assert first == sample_estimating_queries(ESTIMATING_CATALOG, estimating, days, 50, seed=3)
    assert first != sample_estimating_queries(ESTIMATING_CATALOG, estimating, days, 50, seed=4)


def names_a_leaf_twice(tree: dict) -> bool:
    named = [leaf_identity(x) for x in leaves(parse_query(tree))]
    return len(set(named)) < len(named)


def test_the_mix_and_the_sought_trees_ask_no_question_twice():
    # One app of three event types over two days: a small catalog repeats itself when drawn.
    catalog = ESTIMATING_CATALOG[:3]
    days = [date(2026, 11, 1), date(2026, 11, 2)]
    asked = AskedTrees()
    trees = sample_queries(catalog, days, 200, seed=3, asked=asked)
    trees += sample_estimating_queries(catalog, {("shop", "view")}, days, 100, 3, asked)
    forms = [canonical_form(parse_query(tree)) for tree in trees]
    assert len(set(forms)) == len(forms) == 300
    assert not any(names_a_leaf_twice(tree) for tree in trees)


def test_a_catalog_too_small_for_the_count_gives_fewer_distinct_trees():
    # One event type on one day: its few leaves (a minimum count or none) repeat in the draws.
    catalog = [CatalogEntry("shop", "view", 90_000, {})]
    days = [date(2026, 11, 1)]
    trees = sample_estimating_queries(catalog, {("shop", "view")}, days, 50, seed=3)
    forms = {canonical_form(parse_query(tree)) for tree in trees}
    assert 0 < len(forms) == len(trees) < 50


def test_a_repeated_tree_in_another_order_is_not_asked_again():
    asked = AskedTrees()
    assert asked.ask({"union": [leaf("view"), leaf("buy")]})
    assert not asked.ask({"union": [leaf("buy"), leaf("view")]})
    assert asked.ask({"difference": [leaf("buy"), leaf("view")]})


@pytest.mark.parametrize("operator", ["union", "intersection", "difference"])
def test_a_tree_naming_a_leaf_twice_is_not_asked(operator):
    asked = AskedTrees()
    assert not asked.ask({operator: [leaf("view"), leaf("view")]})
    assert not asked.ask({"intersection": [{operator: [leaf("view"), leaf("buy")]}, leaf("view")]})
    assert asked.ask({operator: [leaf("view"), leaf("view", min_count=2)]})


DECISIONS = "app_id string, event_type string, attribute string, kept boolean, date string"


def test_the_catalog_offers_pairs_absent_on_some_days(spark):
    events = spark.createDataFrame(
        [
            ("shop", "view", "u1", datetime(2026, 11, 1, 12), {"color": "red"}),
            ("shop", "view", "u2", datetime(2026, 11, 2, 12), {"color": "blue"}),
            ("shop", "refund", "u3", datetime(2026, 11, 2, 12), {"reason": "late"}),
        ],
        SCHEMA,
    )
    decisions = spark.createDataFrame(
        [
            ("shop", "view", "color", True, "2026-11-01"),
            ("shop", "view", "color", True, "2026-11-02"),
            ("shop", "refund", "reason", True, "2026-11-02"),  # first seen on the second day
        ],
        DECISIONS,
    )
    catalog = {(e.app_id, e.event_type): e.attributes for e in build_catalog(events, decisions)}
    assert catalog == {
        ("shop", "refund"): {"reason": ["late"]},
        ("shop", "view"): {"color": ["blue", "red"]},
    }


def test_the_catalog_leaves_out_attributes_trimmed_on_a_day_of_the_pair(spark):
    events = spark.createDataFrame(
        [("shop", "view", "u1", datetime(2026, 11, d, 12), {"color": "red"}) for d in (1, 2)],
        SCHEMA,
    )
    decisions = spark.createDataFrame(
        [
            ("shop", "view", "color", True, "2026-11-01"),
            ("shop", "view", "color", False, "2026-11-02"),
        ],
        DECISIONS,
    )
    (entry,) = build_catalog(events, decisions)
    assert entry.attributes == {}


def test_the_catalog_offers_kept_attributes_only_with_their_most_frequent_values(spark):
    events = spark.createDataFrame(
        [
            (
                "shop",
                "view",
                f"u{i}",
                datetime(2026, 11, 1, 12),
                {"color": color, "session": f"s{i}"},
            )
            for i, color in enumerate(["red", "red", "red", "blue", "blue", "green"])
        ],
        SCHEMA,
    )
    decisions = spark.createDataFrame(
        [
            ("shop", "view", "color", True, "2026-11-01"),
            ("shop", "view", "session", False, "2026-11-01"),
        ],
        DECISIONS,
    )
    (entry,) = build_catalog(events, decisions, max_values=2)
    assert entry.attributes == {"color": ["red", "blue"]}
