"""The exact yardstick (Spark) and the fixed-seed query mix."""

from __future__ import annotations

from datetime import date, datetime

import numpy as np
import pytest

from profile_store.audiences.accuracy import AccuracyBars, accuracy_report, relative_errors
from profile_store.audiences.exact import exact_leaf_users, exact_users
from profile_store.audiences.query import leaves, parse_query
from profile_store.audiences.query_sampler import CatalogEntry, build_catalog, sample_queries

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


def test_exact_tree_set_algebra(spark, events):
    tree = {"difference": [leaf("view", attributes={"color": "red"}), leaf("buy")]}
    assert exact_count(spark, events, tree) == 4  # odd users 1..9 minus u1


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


def test_relative_error_handles_empty_exact_answers():
    errors = relative_errors(np.array([0.0, 3.0, 110.0]), np.array([0.0, 0.0, 100.0]))
    assert errors.tolist() == [0.0, 1.0, pytest.approx(0.1)]


def test_accuracy_report_names_every_failed_bar():
    report = accuracy_report([100, 150], [100, 100], [90, 140], [110, 160], [True, False])
    assert report.mean_error == pytest.approx(0.25)
    assert report.bounds_coverage == 0.5
    failures = report.failures(AccuracyBars())
    assert len(failures) == 4 and "mean error" in failures[0]


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
