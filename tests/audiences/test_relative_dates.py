"""Leaves with ``last_days``: counted back from the latest built day, shown resolved."""

from __future__ import annotations

from datetime import date

import pytest
from known_audience import DAY_1, DAY_2

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.query import QueryError, parse_query, resolve_dates
from profile_store.audiences.sketch_table import sketch_table_opener

SHOP_INSTALLS = {"app_id": "com.shop", "event_type": "install"}


@pytest.fixture
def engine(builder_pool) -> AudienceEngine:
    return AudienceEngine(sketch_table_opener(builder_pool))


def test_last_days_resolves_to_the_days_ending_with_the_latest_built_day():
    query = resolve_dates(parse_query({**SHOP_INSTALLS, "last_days": 7}), date(2026, 11, 30))
    assert (query.date_from, query.date_to) == (date(2026, 11, 24), date(2026, 11, 30))


def test_last_days_equals_the_same_explicit_range(engine):
    relative = engine.estimate({**SHOP_INSTALLS, "last_days": 2})
    explicit = engine.estimate(
        {**SHOP_INSTALLS, "date_from": "2026-11-01", "date_to": "2026-11-02"}
    )
    assert relative.estimate == explicit.estimate == 100


def test_the_answer_shows_each_relative_leaf_resolved(engine):
    answer = engine.estimate(
        {
            "intersection": [
                {**SHOP_INSTALLS, "last_days": 1},
                {**SHOP_INSTALLS, "date_from": "2026-11-01", "date_to": "2026-11-01"},
            ]
        }
    )
    assert answer.leaf_dates == [
        {
            "path": "$.intersection[0]",
            "date_from": DAY_2.isoformat(),
            "date_to": DAY_2.isoformat(),
            "last_days": 1,
        },
        {"path": "$.intersection[1]", "date_from": DAY_1.isoformat(), "date_to": "2026-11-01"},
    ]
    assert answer.estimate == 20  # u40..u59 installed on both days


def test_last_days_reaching_before_the_first_built_day_names_the_missing_days(engine):
    with pytest.raises(QueryError, match="no sketches for com.shop/install on 2026-10-31"):
        engine.estimate({**SHOP_INSTALLS, "last_days": 3})


def test_last_days_with_no_day_built_is_an_error_on_last_days(audience_engine):
    # The shared data set has no built-day markers.
    with pytest.raises(QueryError) as raised:
        audience_engine.estimate({**SHOP_INSTALLS, "last_days": 7})
    assert raised.value.path == "$.last_days"
    assert "no day is built yet" in raised.value.problem


@pytest.mark.parametrize(
    ("leaf", "path", "problem"),
    [
        ({"last_days": 0}, "$.last_days", "must be a positive integer (days)"),
        ({"last_days": "7"}, "$.last_days", "must be a positive integer (days)"),
        ({"last_days": 400}, "$.last_days", "range of 400 days exceeds 366"),
        (
            {"last_days": 7, "date_from": "2026-11-01"},
            "$.date_from",
            "give either last_days or date_from and date_to, not both",
        ),
        ({}, "$.date_from", "required, a non-empty string"),
    ],
)
def test_a_bad_relative_range_is_refused_naming_the_field(leaf, path, problem):
    with pytest.raises(QueryError) as raised:
        parse_query({**SHOP_INSTALLS, **leaf})
    assert (raised.value.path, raised.value.problem) == (path, problem)
