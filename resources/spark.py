"""The Spark resource: local mode on a laptop, a cluster by configuration.

dagster-pyspark's ``LazyPySparkResource`` is used as is, with the settings of
``profile_store.spark.session``, so that tests, the demo, ``dagster dev`` and ``profiles
import`` run Spark the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

from dagster_pyspark import LazyPySparkResource

from profile_store.spark.session import prepare_this_process, spark_config_from_env


def spark_resource_from_env(
    env: dict[str, str] | None = None, also_reads: Sequence[str] = ()
) -> LazyPySparkResource:
    config = spark_config_from_env(env, also_reads)
    prepare_this_process(config)
    return LazyPySparkResource(spark_config=config)
