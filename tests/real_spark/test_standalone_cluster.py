"""The daily pipeline on a Spark standalone cluster writes exactly what it writes in local mode.

A master and a worker of pyspark's own distribution (``profile_store.spark_standalone``, the
worker with 2 cores and 2 GiB) run the two days with ``SPARK_MASTER=spark://127.0.0.1:PORT``:
executors in JVMs of their own, Python workers started by them, importing this project and
writing sketch and profile rows to the run's HBase gateway over the network. Every lake output
and every HBase row must equal the ``local[*]`` reference run's.
"""

from __future__ import annotations

import pytest
from pipeline_runs import differences, hbase_tables, lake_datasets, run_pipeline

from profile_store.spark_standalone import SparkStandalone


@pytest.fixture(scope="module")
def cluster_run(generated_days, tmp_path_factory):
    work = tmp_path_factory.mktemp("cluster")
    with SparkStandalone(work / "spark", cores=2, memory="2g") as cluster:
        run = run_pipeline(
            work,
            generated_days,
            {
                "SPARK_MASTER": cluster.master_url,
                "SPARK_CONF_JSON": '{"spark.executor.memory": "1g"}',
            },
        )
        applications = cluster.status()["completedapps"]
    return run, applications


def test_the_run_used_the_clusters_executors(cluster_run):
    _, applications = cluster_run
    assert [app["name"] for app in applications] == ["adtech-profiles"]
    assert applications[0]["cores"] == 2


def test_every_lake_output_equals_the_local_runs(cluster_run, reference):
    run, _ = cluster_run
    expected, actual = lake_datasets(reference), lake_datasets(run)
    assert len(expected) > 10
    assert differences(expected, actual) == []


def test_every_hbase_row_equals_the_local_runs(cluster_run, reference):
    run, _ = cluster_run
    expected, actual = hbase_tables(reference.hbase_dir), hbase_tables(run.hbase_dir)
    assert {"sketches", "profiles"} <= set(expected)
    assert differences(expected, actual) == []
