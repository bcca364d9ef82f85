"""A refusal names each exact cause with its days and proposes the range the sketches can answer.

The data set: ``td.14/click`` built from 2017-11-06 to 2017-11-10. On the 6th, a partial first
day, ``os`` looked id-like in its one-day window and was trimmed; it is kept from the 7th to the
9th and never seen on the 10th. ``order_id`` is trimmed every day for its many values.
"""

from __future__ import annotations

import contextlib
from datetime import date

import happybase
import pytest
from known_audience import day_rows

from profile_store.audiences.answerable import (
    NEVER_SEEN,
    NOT_BUILT,
    NOT_KEPT,
    TOO_MANY_VALUES,
    VALUES_TOO_DISTINCT,
    UnanswerableQuery,
    largest_run,
    nearest_shift,
)
from profile_store.audiences.built_days import built_day_cells
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import ensure_table, write_rows

TABLE = "sketches_refusals"
APP, EVENT = "td.14", "click"
D5, D6, D7, D8, D9, D10 = (date(2017, 11, day) for day in range(5, 11))
RULE = {"max_distinct": 100, "max_distinct_ratio": 0.1, "few_values": 20}
ID_LIKE_OS = {
    "reason": VALUES_TOO_DISTINCT, "distinct_values": 40, "appearances": 45, "window_days": 1,
    **RULE,
}  # fmt: skip
MANY_ORDERS = {
    "reason": TOO_MANY_VALUES, "distinct_values": 5000, "appearances": 5200, "window_days": 7,
    **RULE,
}  # fmt: skip


def clicks(day: date, kept: list[str], trimmed: dict) -> list[dict]:
    groups = {"os=ios": {f"u{i}": 1 for i in range(10)}} if kept else {"": {"u0": 1}}
    return day_rows(APP, EVENT, day, groups, kept, trimmed)


@pytest.fixture(scope="module")
def engine(sketch_gateway) -> AudienceEngine:
    connection = happybase.Connection(**sketch_gateway.connection_kwargs())
    ensure_table(connection, TABLE)
    table = connection.table(TABLE)
    write_rows(table, clicks(D6, [], {"os": ID_LIKE_OS, "order_id": MANY_ORDERS}))
    for day in (D7, D8, D9):
        write_rows(table, clicks(day, ["os"], {"order_id": MANY_ORDERS}))
    write_rows(table, clicks(D10, [], {"order_id": MANY_ORDERS}))
    for day in (D6, D7, D8, D9, D10):
        table.put(*built_day_cells(day, [(APP, EVENT)]))

    @contextlib.contextmanager
    def open_table():
        yield connection.table(TABLE)

    yield AudienceEngine(open_table)
    connection.close()


def refusal(engine: AudienceEngine, first: date, last: date, **attributes) -> UnanswerableQuery:
    leaf = {"app_id": APP, "event_type": EVENT, "date_from": str(first), "date_to": str(last)}
    with pytest.raises(UnanswerableQuery) as refused:
        engine.estimate({**leaf, **({"attributes": attributes} if attributes else {})})
    return refused.value


def test_an_attribute_trimmed_as_id_like_names_the_rule_and_its_figures(engine):
    refused = refusal(engine, D6, D8, os="ios")
    assert [(c.reason, c.attribute, c.days) for c in refused.causes] == [
        (VALUES_TOO_DISTINCT, "os", (D6,))
    ]
    assert refused.causes[0].measured[0] == {"day": "2017-11-06", **ID_LIKE_OS}
    assert refused.problem.startswith(
        "attribute 'os' of td.14/click cannot be filtered on: trimmed on 2017-11-06 (40 distinct "
        "values in 45 appearances over 1 day: a ratio of 0.89, not below 0.1"
    )


def test_an_attribute_trimmed_for_its_many_values_says_so(engine):
    refused = refusal(engine, D7, D8, order_id="o-1")
    assert [c.reason for c in refused.causes] == [TOO_MANY_VALUES]
    assert "(5000 distinct values in 7 days, more than 100)" in refused.problem


def test_an_attribute_never_seen_is_told_apart_from_a_trimmed_one(engine):
    refused = refusal(engine, D6, D10, os="ios")
    assert [(c.reason, c.days) for c in refused.causes] == [
        (VALUES_TOO_DISTINCT, (D6,)),
        (NEVER_SEEN, (D10,)),
    ]
    assert "never seen on 2017-11-10" in refused.problem


def test_the_largest_answerable_part_of_the_asked_range_is_proposed(engine):
    refused = refusal(engine, D6, D10, os="ios")
    assert refused.answerable == (D7, D9)
    assert refused.problem.endswith("the sketches can answer 2017-11-07 .. 2017-11-09")


def test_without_an_answerable_day_the_nearest_range_of_the_same_length_is_proposed(engine):
    assert refusal(engine, D6, D6, os="ios").answerable == (D7, D7)
    assert refusal(engine, D10, D10, os="ios").answerable == (D9, D9)


def test_no_proposal_when_no_range_nearby_can_be_answered(engine):
    refused = refusal(engine, D7, D8, order_id="o-1")
    assert refused.answerable is None
    assert refused.problem.endswith("no range of 2 days nearby can be answered")


def test_a_day_not_built_is_its_own_cause(engine):
    refused = refusal(engine, D10, date(2017, 11, 11))
    assert [(c.reason, c.days) for c in refused.causes] == [(NOT_BUILT, (date(2017, 11, 11),))]
    assert refused.answerable == (D10, D10)


def test_the_details_carry_the_causes_and_the_range_as_json():
    refused = UnanswerableQuery("$", "p", [], (D7, D9), shift_days=1)
    assert refused.details() == {
        "causes": [],
        "answerable_range": {"date_from": "2017-11-07", "date_to": "2017-11-09"},
        "answerable_shift_days": 1,
    }


def test_the_largest_run_prefers_the_latest_of_equal_runs():
    assert largest_run([D6, D7, D9, D10]) == (D9, D10)
    assert largest_run([]) is None


def test_the_nearest_shift_prefers_the_earlier_of_two_equally_near():
    assert nearest_shift([(D7, D7)], [{D7}], reach=3) == -1


def test_the_nearest_shift_clears_every_range_at_once():
    # Alone, the first range would move 1 day later (onto D7), which the second refuses (D9).
    refused = [{D5, D6}, {D7, D8, D9}]
    assert nearest_shift([(D6, D6), (D8, D8)], refused, reach=3) == -2


def test_a_day_built_before_causes_were_recorded_says_trimmed_or_never_seen(sketch_gateway):
    connection = happybase.Connection(**sketch_gateway.connection_kwargs())
    ensure_table(connection, "sketches_older_build")
    older = [{**row, "trimmed_attributes": None} for row in clicks(D6, [], {})]
    write_rows(connection.table("sketches_older_build"), older)

    @contextlib.contextmanager
    def open_table():
        yield connection.table("sketches_older_build")

    refused = refusal(AudienceEngine(open_table), D6, D6, os="ios")
    connection.close()
    assert [c.reason for c in refused.causes] == [NOT_KEPT]
    assert "trimmed or never seen on 2017-11-06" in refused.problem


# -- queries of several criteria -----------------------------------------------------------------
#
# ``td.7`` in its own table, built from 2017-12-01 to 2017-12-12 (no other day is built). Both
# events filter on ``os``: on ``open`` it is kept every day but the 6th and 7th (trimmed as
# id-like); on ``buy`` it is kept from the 3rd to the 7th and from the 10th, never seen on the
# 1st, 2nd, 8th and 9th. So both answer the 3rd to the 5th and the 10th to the 12th.

CRITERIA_APP = "td.7"
C = {day: date(2017, 12, day) for day in range(1, 13)}
OPEN_REFUSED = (6, 7)
BUY_REFUSED = (1, 2, 8, 9)


def criterion_day(event: str, day: int, refused_days: tuple[int, ...], trimmed: dict) -> list:
    if day in refused_days:
        return day_rows(CRITERIA_APP, event, C[day], {"": {"u0": 1}}, [], trimmed)
    users = {f"u{i}": 1 for i in range(10)}
    return day_rows(CRITERIA_APP, event, C[day], {"os=ios": users}, ["os"], {})


@pytest.fixture(scope="module")
def criteria_engine(sketch_gateway) -> AudienceEngine:
    connection = happybase.Connection(**sketch_gateway.connection_kwargs())
    ensure_table(connection, "sketches_criteria")
    table = connection.table("sketches_criteria")
    for day in C:
        write_rows(table, criterion_day("open", day, OPEN_REFUSED, {"os": ID_LIKE_OS}))
        write_rows(table, criterion_day("buy", day, BUY_REFUSED, {}))
        table.put(*built_day_cells(C[day], [(CRITERIA_APP, "buy"), (CRITERIA_APP, "open")]))

    @contextlib.contextmanager
    def open_table():
        yield connection.table("sketches_criteria")

    yield AudienceEngine(open_table)
    connection.close()


def criterion(event: str, first: int | None = None, last: int | None = None, **extra) -> dict:
    dates = {} if first is None else {"date_from": str(C[first]), "date_to": str(C[last])}
    return {
        "app_id": CRITERIA_APP, "event_type": event, "attributes": {"os": "ios"}, **dates, **extra,
    }  # fmt: skip


def refused_tree(engine: AudienceEngine, tree: dict) -> UnanswerableQuery:
    with pytest.raises(UnanswerableQuery) as refused:
        engine.estimate(tree)
    return refused.value


def test_every_refused_criterion_names_its_causes_beside_its_leaf(criteria_engine):
    tree = {"intersection": [criterion("open", 1, 7), criterion("buy", 1, 7)]}
    refused = refused_tree(criteria_engine, tree)
    assert [(c.leaf, c.reason, c.attribute, c.days) for c in refused.causes] == [
        ("$.intersection[0]", VALUES_TOO_DISTINCT, "os", (C[6], C[7])),
        ("$.intersection[1]", NEVER_SEEN, "os", (C[1], C[2])),
    ]
    assert refused.path == "$.intersection[0].attributes.os"
    assert (
        "attribute 'os' of td.7/open at $.intersection[0] cannot be filtered on: trimmed on "
        "2017-12-06, 2017-12-07" in refused.problem
    )
    assert (
        "attribute 'os' of td.7/buy at $.intersection[1] cannot be filtered on: never seen on "
        "2017-12-01, 2017-12-02" in refused.problem
    )


def test_the_range_proposed_is_the_largest_run_every_criterion_answers(criteria_engine):
    tree = {"intersection": [criterion("open", 1, 7), criterion("buy", 1, 7)]}
    refused = refused_tree(criteria_engine, tree)
    assert refused.answerable == (C[3], C[5]) and refused.shift_days is None
    assert refused.problem.endswith(
        "the sketches can answer every criterion over 2017-12-03 .. 2017-12-05"
    )


def test_without_a_common_day_the_nearest_range_every_criterion_answers_is_proposed(
    criteria_engine,
):
    # The 8th and 9th: open answers them, buy does not. The 6th and 7th (buy's nearest) are
    # refused by open; the 10th and 11th are answered by both.
    tree = {"difference": [criterion("open", 8, 9), criterion("buy", 8, 9)]}
    refused = refused_tree(criteria_engine, tree)
    assert refused.answerable == (C[10], C[11]) and refused.shift_days == 2


def test_criteria_of_different_ranges_are_moved_together_by_the_nearest_shift(criteria_engine):
    # open over the 1st-2nd and buy over the 7th-8th: moved 3 days later, open answers the
    # 4th-5th and buy the 10th-11th; every nearer shift leaves one of them a refused day.
    tree = {"union": [criterion("open", 1, 2), criterion("buy", 7, 8)]}
    refused = refused_tree(criteria_engine, tree)
    assert refused.answerable == (C[4], C[11])
    assert refused.shift_days == 3
    assert refused.problem.endswith(
        "the sketches can answer the query moved 3 days later (2017-12-04 .. 2017-12-11)"
    )


def test_no_proposal_when_no_shift_nearby_answers_every_criterion(criteria_engine):
    # buy over seven days always meets a refused day among the twelve built ones.
    tree = {"intersection": [criterion("open", 1, 2), criterion("buy", 6, 12)]}
    refused = refused_tree(criteria_engine, tree)
    assert refused.answerable is None and refused.shift_days is None
    assert refused.problem.endswith("no shift of the query within 31 days can be answered")


def test_relative_criteria_are_proposed_in_the_days_they_resolve_to(criteria_engine):
    # The last 7 days end with the 12th: open refuses the 6th-7th, buy the 8th-9th.
    tree = {"intersection": [criterion("open", last_days=7), criterion("buy", last_days=7)]}
    refused = refused_tree(criteria_engine, tree)
    assert refused.answerable == (C[10], C[12])
