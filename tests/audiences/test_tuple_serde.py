"""Reading Spark's counts sketches with numpy gives what the datasketches package reads."""

from __future__ import annotations

import numpy as np
import pytest
from pyspark.sql import functions as F

from profile_store.audiences.tuple_serde import _entries_of, count_entries, load_counts_sketch


@pytest.mark.parametrize(
    ("users", "lg_k"), [(1, 12), (40, 12), (5000, 8)], ids=["single", "exact", "estimating"]
)
def test_count_entries_equal_the_library_reading_of_a_spark_sketch(spark, users, lg_k):
    events = spark.range(users * 3).select(
        (F.col("id") % users).cast("string").alias("user_id"), (F.col("id") % 2 + 1).alias("n")
    )
    (row,) = events.agg(
        F.tuple_sketch_agg_integer("user_id", "n", lg_k, "sum").alias("counts")
    ).collect()
    fast = count_entries(row.counts)
    slow = _entries_of(load_counts_sketch(row.counts))
    order, expected_order = np.argsort(fast.hashes), np.argsort(slow.hashes)
    assert np.array_equal(fast.hashes[order], slow.hashes[expected_order])
    assert np.array_equal(fast.counts[order], slow.counts[expected_order])
    assert (fast.theta64, fast.seed_hash) == (slow.theta64, slow.seed_hash)
    assert fast.counts.sum() > 0
