"""Pairwise precision/recall and B-cubed against a small hand-made answer key."""

from __future__ import annotations

import random

import pandas as pd
import pytest

from profile_store.identity.quality import identity_quality, measure

# Person P: a, b log in (m1); c carries P's email and so does b: a, b, c are linkable.
# Person Q: d logs in (m2), e carries Q's email only: no profile has both, so d-e is not.
TRUTH = [
    ("a", "P", "m1", "eP"),
    ("b", "P", "m1", "eP"),
    ("c", "P", "m1", "eP"),
    ("d", "Q", "m2", "eQ"),
    ("e", "Q", "m2", "eQ"),
]
KEYS = [
    ("member_id", "m1", "a"),
    ("member_id", "m1", "b"),
    ("email_sha256", "eP", "b"),
    ("email_sha256", "eP", "c"),
    ("member_id", "m2", "d"),
    ("email_sha256", "eQ", "e"),
]


def quality(spark, assignment):
    return identity_quality(
        spark.createDataFrame(assignment, "profile string, master string"),
        spark.createDataFrame([(p,) for p, *_ in TRUTH], "profile string"),
        spark.createDataFrame(
            TRUTH, "user_id string, person_id string, member_id string, email_sha256 string"
        ),
        spark.createDataFrame(KEYS, "key_type string, key string, profile string"),
    )


def test_the_right_components_have_full_precision_and_recall(spark):
    got = quality(spark, [("a", "a"), ("b", "a"), ("c", "a")])
    assert (got.precision, got.recall) == (1.0, 1.0)
    assert (got.predicted_pairs, got.linkable_pairs) == (3, 3)


def test_merging_two_persons_lowers_precision(spark):
    got = quality(spark, [(p, "a") for p in "abcde"])
    assert got.precision == pytest.approx(4 / 10)  # 3 pairs of P + 1 pair of Q, of 10
    assert got.recall == 1.0


def test_a_missed_link_lowers_recall_and_bcubed(spark):
    got = quality(spark, [("a", "a"), ("b", "a")])
    assert got.recall == pytest.approx(1 / 3)
    assert got.bcubed_precision == 1.0 and got.bcubed_recall < 1.0


def pairwise(rows: list[tuple[str, str, bool, bool]]) -> dict:
    """The figures by their definitions, pair by pair (no grouping shortcut)."""
    bridged = {p for p, _, login, email in rows if login and email}
    pairs = [(x, y) for i, x in enumerate(rows) for y in rows[i + 1 :]]

    def linkable(x, y):
        if x[0] != y[0] or not (x[2] or x[3]) or not (y[2] or y[3]):
            return False
        return x[0] in bridged or (x[2] and y[2]) or (x[3] and y[3])

    def overlap(x, of):
        return sum(1 for y in rows if y[1] == x[1] and y[0] == x[0]) / sum(
            1 for y in rows if y[of] == x[of]
        )

    return {
        "predicted_pairs": sum(x[1] == y[1] for x, y in pairs),
        "true_predicted_pairs": sum(x[1] == y[1] and x[0] == y[0] for x, y in pairs),
        "linkable_pairs": sum(linkable(x, y) for x, y in pairs),
        "linked_linkable_pairs": sum(linkable(x, y) and x[1] == y[1] for x, y in pairs),
        "bcubed_precision": sum(overlap(x, 1) for x in rows) / len(rows),
        "bcubed_recall": sum(overlap(x, 0) for x in rows) / len(rows),
    }


@pytest.mark.parametrize("seed", range(20))
def test_the_counts_equal_the_pairwise_definitions_on_random_profiles(seed):
    rng = random.Random(seed)
    rows = [
        (
            f"P{rng.randrange(8)}",
            f"m{rng.randrange(10)}",
            rng.random() < 0.4,
            rng.random() < 0.4,
        )
        for _ in range(rng.randrange(1, 60))
    ]
    got = measure(pd.DataFrame(rows, columns=["person_id", "master", "login", "email"]))
    assert got.profiles == len(rows)
    for name, value in pairwise(rows).items():
        assert getattr(got, name) == pytest.approx(value), name
