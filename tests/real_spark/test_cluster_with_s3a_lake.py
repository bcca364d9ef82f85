"""The daily pipeline on a Spark standalone cluster, with its lake on S3 through Hadoop's S3A.

A master and a worker of pyspark's own distribution (``profile_store.launchers.spark_standalone``,
the worker with 2 cores and 2 GiB) run the test days with ``SPARK_MASTER=spark://127.0.0.1:PORT``
and ``SPARK_LOCAL_IP=127.0.0.1``, as ``make spark-cluster`` prints them:
executors in JVMs of their own, Python workers started by them, importing this project and
writing sketch and profile rows to the run's HBase gateway over the network. The lake is
``s3://BUCKET/PREFIX`` on a local moto server, configured only as a user would configure it
(``PROFILES_LAKE_ROOT``, ``PROFILES_S3_ENDPOINT_URL``, AWS credentials in the environment of the
driver and of the worker, as an instance role would give them), so ``hadoop-aws`` of pyspark's
Hadoop comes from Maven Central through the jar cache (``profile_store.spark.s3a``), is shipped to
the executors, and every Spark read and write (landing files, events, quarantine, attribute
stats, identity and profile state) goes through S3A, on the driver and on the executors.

The bucket is then downloaded, and every lake data set and every HBase row must equal the
reference run's (``local[*]``, a lake directory).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from pipeline_runs import (
    S3_CREDENTIALS,
    differences,
    hbase_tables,
    lake_datasets,
    run_pipeline,
    s3_client,
)
from suite_jvms import executor_java_options

from profile_store.lake.layout import GROUND_TRUTH, LANDING
from profile_store.launchers.spark_standalone import SparkStandalone

BUCKET = "s3a-lake"
PREFIX = "tenant-a/lake"
CREDENTIALS = S3_CREDENTIALS


def upload(client, source: Path, prefix: str) -> None:
    for path in sorted(source.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(source.parent).as_posix()}"
            client.upload_file(str(path), BUCKET, key)


def download(client, prefix: str, target: Path) -> list[str]:
    """Every object under ``prefix`` into ``target``; returns the keys, relative."""
    keys = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
        for item in page.get("Contents", []):
            relative = item["Key"][len(prefix) + 1 :]
            keys.append(relative)
            if relative.endswith("/"):  # a directory marker
                continue
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            client.download_file(BUCKET, item["Key"], str(target / relative))
    return keys


@pytest.fixture(scope="module")
def cluster_run(generated_days, s3_endpoint, tmp_path_factory):
    """(the run, the bucket's keys, the cluster's finished applications)."""
    client = s3_client(s3_endpoint)
    client.create_bucket(Bucket=BUCKET)
    upload(client, generated_days / LANDING, PREFIX)
    upload(client, generated_days / GROUND_TRUTH, PREFIX)
    work = tmp_path_factory.mktemp("cluster")
    with SparkStandalone(work / "spark", cores=2, memory="2g", environment=CREDENTIALS) as cluster:
        run = run_pipeline(
            work,
            generated_days,
            {
                **cluster.environment(),  # SPARK_MASTER, SPARK_LOCAL_IP as the launcher prints
                "SPARK_CONF_JSON": json.dumps(
                    {
                        "spark.executor.memory": "1g",
                        # The suite's drivers' JVM options (tests/suite_jvms.py), for the
                        # executors.
                        "spark.executor.extraJavaOptions": executor_java_options(
                            os.environ.get("SPARK_SUBMIT_OPTS", "")
                        ),
                    }
                ),
                "PROFILES_S3_ENDPOINT_URL": s3_endpoint,
                **CREDENTIALS,
            },
            lake_uri=f"s3://{BUCKET}/{PREFIX}",
        )
        applications = cluster.status()["completedapps"]
    keys = download(client, PREFIX, run.lake)
    run.lake_uri = f"s3a://{BUCKET}/{PREFIX}"
    return run, keys, applications


def test_the_run_used_the_clusters_executors(cluster_run):
    _, _, applications = cluster_run
    assert [app["name"] for app in applications] == ["adtech-profiles"]
    assert applications[0]["cores"] == 2


def test_spark_wrote_every_lake_area_to_the_bucket(cluster_run, reference):
    _, keys, _ = cluster_run
    written = {key.split("/")[0] for key in keys if key.endswith(".parquet")}
    local = {p.relative_to(reference.lake).parts[0] for p in reference.lake.rglob("*.parquet")}
    assert written == local
    assert len(written) >= 8


def test_every_lake_output_equals_the_local_directory_runs(cluster_run, reference):
    run, _, _ = cluster_run
    expected, actual = lake_datasets(reference), lake_datasets(run)
    assert len(expected) > 10
    assert differences(expected, actual) == []


def test_every_hbase_row_equals_the_local_runs(cluster_run, reference):
    run, _, _ = cluster_run
    expected, actual = hbase_tables(reference.hbase_dir), hbase_tables(run.hbase_dir)
    assert {"sketches", "profiles"} <= set(expected)
    assert differences(expected, actual) == []
