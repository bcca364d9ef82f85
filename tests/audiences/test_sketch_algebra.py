"""Sketch set algebra: exact on small sets, bounded on large ones, min_count exact per user."""

from __future__ import annotations

import numpy as np
import pytest
from datasketches import AccumulatorPolicy, update_theta_sketch, update_tuple_sketch

from profile_store.audiences.query import parse_query
from profile_store.audiences.sketch_algebra import (
    MAX_THETA,
    compact_theta_from_hashes,
    evaluate,
    union_theta,
    users_with_min_count,
)
from profile_store.audiences.tuple_serde import SERDE


def theta_bytes(users, lg_k=12) -> bytes:
    sketch = update_theta_sketch(lg_k)
    for user in users:
        sketch.update(user)
    return sketch.compact().serialize()


def counts_bytes(user_counts: dict[str, int], lg_k=12) -> bytes:
    sketch = update_tuple_sketch(AccumulatorPolicy(), lg_k)
    for user, count in user_counts.items():
        sketch.update(user, count)
    return sketch.compact().serialize(SERDE)


def leaf(path_event: str) -> dict:
    return {
        "app_id": "a",
        "event_type": path_event,
        "date_from": "2026-11-01",
        "date_to": "2026-11-01",
    }


def test_hashes_round_trip_into_a_compact_sketch():
    original = update_theta_sketch(12)
    for i in range(20_000):
        original.update(f"u{i}")
    compact = original.compact()
    rebuilt = compact_theta_from_hashes(np.array(list(compact), np.uint64), compact.theta64)
    assert rebuilt.get_estimate() == compact.get_estimate()
    assert rebuilt.get_upper_bound(2) == compact.get_upper_bound(2)


def test_no_hashes_at_full_theta_is_the_empty_sketch():
    assert compact_theta_from_hashes(np.empty(0, np.uint64), MAX_THETA).is_empty()


def test_union_of_rows_counts_each_user_once():
    sketch = union_theta([theta_bytes(["a", "b"]), theta_bytes(["b", "c"])], 12)
    assert sketch.get_estimate() == 3 and not sketch.is_estimation_mode()


def test_min_count_sums_a_users_events_across_rows():
    rows = [counts_bytes({"a": 2, "b": 1}), counts_bytes({"a": 1, "b": 1, "c": 5})]
    assert users_with_min_count(rows, 3, 12).get_estimate() == 2  # a=3, c=5; b=2
    assert users_with_min_count(rows, 6, 12).get_estimate() == 0


def test_min_count_estimate_is_close_in_estimation_mode():
    rng = np.random.default_rng(1)
    counts = {f"u{i}": int(c) for i, c in enumerate(rng.integers(1, 7, 50_000))}
    truth = sum(1 for c in counts.values() if c >= 4)
    split = [dict(list(counts.items())[i::2]) for i in range(2)]
    sketch = users_with_min_count([counts_bytes(part) for part in split], 4, 12)
    assert sketch.is_estimation_mode()
    assert sketch.get_lower_bound(3) <= truth <= sketch.get_upper_bound(3)


def test_tree_operators_follow_set_algebra():
    sketches = {
        "$.difference[0].intersection[0]": union_theta([theta_bytes("abcd")], 12),
        "$.difference[0].intersection[1]": union_theta([theta_bytes("bcde")], 12),
        "$.difference[1]": union_theta([theta_bytes("c")], 12),
    }
    tree = parse_query({"difference": [{"intersection": [leaf("x"), leaf("y")]}, leaf("z")]})
    assert evaluate(tree, sketches, 12).get_estimate() == 2  # {b, d}


@pytest.mark.parametrize(
    ("operator", "expected"), [("union", 5), ("intersection", 1), ("difference", 1)]
)
def test_operators_with_three_children(operator, expected):
    sets = ["abc", "cde", "bcd"]
    tree = parse_query({operator: [leaf("x"), leaf("y"), leaf("z")]})
    sketches = {f"$.{operator}[{i}]": union_theta([theta_bytes(s)], 12) for i, s in enumerate(sets)}
    # difference: abc - (cde | bcd) = {a}
    assert evaluate(tree, sketches, 12).get_estimate() == expected


def test_a_wider_union_keeps_every_shared_sample_below_the_common_theta():
    days = [theta_bytes(f"u{i}" for i in range(d * 5000, d * 5000 + 20000)) for d in range(6)]
    narrow, wide = union_theta(days, 12), union_theta(days, 16)
    assert narrow.num_retained == 4096
    assert wide.num_retained > 2 * 4096  # every day's sketch samples the union
    exact = 45000
    assert wide.get_lower_bound(2) <= exact <= wide.get_upper_bound(2)
    narrow_width = narrow.get_upper_bound(2) - narrow.get_lower_bound(2)
    assert wide.get_upper_bound(2) - wide.get_lower_bound(2) < narrow_width / 1.5
