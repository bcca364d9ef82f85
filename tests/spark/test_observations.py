"""``observed_metrics``: a query's observed figures, or None where Spark dropped them."""

from __future__ import annotations

from pyspark.sql import Observation
from pyspark.sql import functions as F


def _rows(spark, tmp_path):
    path = str(tmp_path / "ids")
    spark.range(100).write.parquet(path)
    return spark.read.parquet(path)


def test_the_metrics_of_the_observed_querys_action_are_returned(spark, tmp_path):
    from profile_store.spark.observations import observed_metrics

    seen = Observation("seen")
    rows = _rows(spark, tmp_path).observe(seen, F.count(F.lit(1)).alias("rows"))
    rows.where(F.col("id") < 10).groupBy("id").count().collect()
    assert observed_metrics(seen) == {"rows": 100}


def test_metrics_dropped_with_a_stage_adaptive_execution_found_empty_are_none(spark, tmp_path):
    """The observation saw 100 rows, but the filter after it emptied the stage: adaptive
    execution replaced the stage, observation and all, so there is nothing to read."""
    from profile_store.spark.observations import observed_metrics

    seen = Observation("seen")
    rows = _rows(spark, tmp_path).observe(seen, F.count(F.lit(1)).alias("rows"))
    rows.where(F.col("id") < 0).groupBy("id").count().collect()
    assert observed_metrics(seen) is None
