"""Pairwise precision/recall and B-cubed against a small hand-made answer key."""

from __future__ import annotations

import pytest

from profile_store.identity.quality import identity_quality

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
