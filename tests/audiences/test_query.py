"""Parsing audience query trees: sound trees parse, every fault is named by its JSON path."""

from __future__ import annotations

from datetime import date

import pytest

from profile_store.audiences.query import (
    Leaf,
    Operation,
    QueryError,
    QueryLimits,
    canonical_form,
    leaves,
    parse_query,
)


def leaf(**overrides) -> dict:
    base = {
        "app_id": "com.shop",
        "event_type": "purchase",
        "date_from": "2026-11-01",
        "date_to": "2026-11-07",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def error_of(tree, limits=None) -> QueryError:
    with pytest.raises(QueryError) as caught:
        parse_query(tree, limits)
    return caught.value


def test_a_leaf_parses_with_dates_and_options():
    node = parse_query(leaf(min_count=3, attributes={"color": "red"}))
    assert isinstance(node, Leaf)
    assert node.date_from == date(2026, 11, 1) and len(node.days()) == 7
    assert node.min_count == 3 and node.attributes == {"color": "red"}


def test_nested_operators_parse_with_paths_to_each_leaf():
    node = parse_query({"difference": [{"intersection": [leaf(), leaf()]}, leaf()]})
    assert isinstance(node, Operation) and node.operator == "difference"
    assert [x.path for x in leaves(node)] == [
        "$.difference[0].intersection[0]",
        "$.difference[0].intersection[1]",
        "$.difference[1]",
    ]


def test_unknown_operator_is_named():
    err = error_of({"xor": [leaf(), leaf()]})
    assert err.path == "$" and "unknown operator xor" in str(err)


def test_an_operator_needs_two_children():
    assert error_of({"union": [leaf()]}).path == "$.union"


def test_missing_leaf_field_is_located():
    err = error_of({"union": [leaf(), leaf(event_type=None)]})
    assert err.path == "$.union[1].event_type"


def test_unparseable_date_is_located():
    assert error_of(leaf(date_to="next week")).path == "$.date_to"


@pytest.mark.parametrize(
    "other_iso_form", ["20261107", "2026-W45-6", "2026-311", "2026-11-07T00:00"]
)
def test_only_yyyy_mm_dd_is_a_date(other_iso_form):
    err = error_of(leaf(date_to=other_iso_form))
    assert err.path == "$.date_to" and "YYYY-MM-DD" in err.problem


def test_date_from_after_date_to_is_rejected():
    err = error_of(leaf(date_from="2026-11-09"))
    assert err.path == "$.date_from" and "after date_to" in err.problem


def test_date_range_beyond_the_limit_is_rejected():
    err = error_of(leaf(date_to="2026-12-31"), QueryLimits(max_days=30))
    assert "exceeds 30" in err.problem


@pytest.mark.parametrize("bad", [0, -1, 2.5, "3", True])
def test_min_count_must_be_a_positive_integer(bad):
    assert error_of(leaf(min_count=bad)).path == "$.min_count"


def test_attribute_values_must_be_strings():
    assert error_of(leaf(attributes={"level": 3})).path == "$.attributes.level"


@pytest.mark.parametrize("not_a_filter", [[], "", None, 0])
def test_attributes_that_are_not_an_object_are_rejected_not_read_as_no_filter(not_a_filter):
    err = error_of({"attributes": not_a_filter, **leaf()})
    assert err.path == "$.attributes" and "expected an object" in err.problem


def test_an_empty_attribute_name_is_rejected_naming_it():
    err = error_of(leaf(attributes={"": "red"}))
    assert err.path == '$.attributes[""]' and "must not be empty" in err.problem


def test_an_empty_attribute_value_is_rejected():
    assert error_of(leaf(attributes={"color": ""})).path == "$.attributes.color"


def test_unknown_leaf_fields_are_rejected():
    assert error_of(leaf(colour="red")).path == "$.colour"


def test_depth_and_size_limits_hold():
    deep = leaf()
    for _ in range(3):
        deep = {"union": [deep, leaf()]}
    assert "deeper" in error_of(deep, QueryLimits(max_depth=3)).problem
    wide = {"union": [leaf() for _ in range(5)]}
    assert "too many leaves" in error_of(wide, QueryLimits(max_leaves=4)).problem


def test_non_object_nodes_are_rejected():
    assert error_of({"union": [leaf(), ["x"]]}).path == "$.union[1]"


def test_an_event_type_longer_than_the_limit_is_refused_with_its_path() -> None:
    tree = {"app_id": "a", "event_type": "e" * 1025, "date_from": "2026-11-01",
            "date_to": "2026-11-01"}  # fmt: skip
    with pytest.raises(QueryError) as raised:
        parse_query(tree)
    assert raised.value.path == "$.event_type"
    assert "longer than 1024 characters" in str(raised.value)


def form(tree: dict) -> tuple:
    return canonical_form(parse_query(tree))


def test_trees_differing_in_the_order_of_commutative_operands_share_a_canonical_form():
    a, b, c = leaf(), leaf(event_type="view"), leaf(min_count=2)
    assert form({"union": [a, b]}) == form({"union": [b, a]})
    assert form({"intersection": [{"union": [a, b]}, c]}) == form(
        {"intersection": [c, {"union": [b, a]}]}
    )
    assert form({"difference": [a, b, c]}) == form({"difference": [a, c, b]})


def test_a_difference_keeps_its_first_operand_apart_in_the_canonical_form():
    a, b = leaf(), leaf(event_type="view")
    assert form({"difference": [a, b]}) != form({"difference": [b, a]})


def test_leaves_selecting_other_users_have_other_canonical_forms():
    assert form(leaf()) != form(leaf(min_count=2))
    assert form(leaf(attributes={"color": "red", "size": "M"})) == form(
        leaf(attributes={"size": "M", "color": "red"})
    )
