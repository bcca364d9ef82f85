"""``make spark-cluster``: a master and a worker until Ctrl-C, printing what a driver needs to run
on them (``SPARK_MASTER``, ``SPARK_LOCAL_IP``); no fixed port but the ones chosen free, and a
start timeout of the user's choosing."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from foreground_commands import REPO, interrupt, start_until_ready

from profile_store.launchers.spark_standalone import ClusterStartError, SparkStandalone

# A driver as the pipeline's: a session on the printed master, a job on the worker's executors.
DRIVER = """
import json, os
from pyspark.sql import SparkSession
spark = (
    SparkSession.builder.master(os.environ["SPARK_MASTER"])
    .config("spark.executor.memory", "512m")
    .config("spark.cores.max", "1")
    .getOrCreate()
)
total = spark.range(1000).repartition(2).selectExpr("sum(id)").first()[0]
print(json.dumps({"total": total, "driver_host": spark.conf.get("spark.driver.host")}))
spark.stop()
"""


@pytest.fixture(scope="module")
def spark_cluster(tmp_path_factory) -> Iterator[tuple[dict[str, str], Path]]:
    """``spark-standalone`` as ``make spark-cluster`` runs it: (the printed variables, work dir).
    Stopped with SIGINT afterwards, which must end it with exit 0."""
    work = tmp_path_factory.mktemp("spark-cluster")
    process, output = start_until_ready(
        [
            *(sys.executable, "-m", "profile_store.cli.launchers", "spark-standalone"),
            *("--work-dir", str(work), "--cores", "1", "--memory", "1g"),
            *("--start-timeout", "600"),
        ]
    )
    try:
        yield dict(re.findall(r"(SPARK_\w+)=(\S+)", output)), work
    finally:
        rest = interrupt(process)
    assert process.returncode == 0, rest
    assert "stopping the Spark cluster" in rest


def test_it_prints_the_master_and_the_drivers_address(spark_cluster):
    variables, _ = spark_cluster
    assert re.fullmatch(r"spark://127\.0\.0\.1:\d+", variables["SPARK_MASTER"])
    assert variables["SPARK_LOCAL_IP"] == "127.0.0.1"


def test_a_driver_with_the_printed_variables_runs_its_job_on_the_workers_executors(
    spark_cluster, tmp_path
):
    variables, work = spark_cluster
    completed = subprocess.run(
        [sys.executable, "-c", DRIVER],
        env={**_environ_without_spark(), **variables},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    answer = json.loads(completed.stdout.strip().splitlines()[-1])
    assert answer["total"] == sum(range(1000))
    # SPARK_LOCAL_IP=127.0.0.1: the driver advertises the loopback's name ("localhost").
    assert ipaddress.ip_address(socket.gethostbyname(answer["driver_host"])).is_loopback
    executor_logs = list((work / "work").glob("app-*/*/stderr"))
    assert executor_logs, "no executor ran on the worker"


def test_the_master_runs_no_rest_submission_server(spark_cluster):
    _, work = spark_cluster
    master_log = (work / "logs" / "master.log").read_text()
    assert "Starting Spark master" in master_log
    assert "REST server" not in master_log


# Once both executors have registered, four tasks: each says where it ran (a Python worker runs
# in its executor's directory, work/app-*/<executor id>).
TWO_EXECUTORS_DRIVER = """
import json, os, time
from pyspark.sql import SparkSession
spark = (
    SparkSession.builder.master(os.environ["SPARK_MASTER"])
    .config("spark.executor.memory", "512m")
    .getOrCreate()
)
status = spark.sparkContext._jsc.sc().getExecutorMemoryStatus
deadline = time.monotonic() + 300
while status().size() < 3 and time.monotonic() < deadline:  # the driver and two executors
    time.sleep(0.5)
def where(rows):
    time.sleep(1)
    yield os.getcwd()
ran_in = spark.sparkContext.parallelize(range(8), 8).mapPartitions(where).collect()
print(json.dumps({"registered": status().size() - 1, "ran_in": sorted(set(ran_in))}))
spark.stop()
"""


def test_two_workers_of_one_core_each_run_a_jobs_tasks_in_two_executors(tmp_path):
    with SparkStandalone(tmp_path, cores=1, memory="1g", workers=2, start_timeout=600) as cluster:
        assert cluster.status()["aliveworkers"] == 2
        assert sum(worker["cores"] for worker in cluster.status()["workers"]) == 2
        completed = subprocess.run(
            [sys.executable, "-c", TWO_EXECUTORS_DRIVER],
            env={**_environ_without_spark(), **cluster.environment()},
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert completed.returncode == 0, completed.stderr[-4000:]
    answer = json.loads(completed.stdout.strip().splitlines()[-1])
    assert answer["registered"] == 2
    executor_dirs = {str(d.parent) for d in (tmp_path / "work").glob("app-*/*/stderr")}
    assert len(executor_dirs) == 2
    assert set(answer["ran_in"]) == executor_dirs


def test_a_cluster_of_no_workers_is_refused(tmp_path):
    with pytest.raises(ValueError, match="workers: expected at least 1, got 0"):
        SparkStandalone(tmp_path, workers=0)


def test_a_master_not_up_within_the_start_timeout_is_refused_saying_what_it_waited_for(
    tmp_path,
):
    cluster = SparkStandalone(tmp_path, start_timeout=0)
    with pytest.raises(ClusterStartError) as refused:
        cluster.start()
    assert str(refused.value).startswith(
        "the master's status page did not answer within 0 s; a busy machine may need a "
        "longer start timeout (--start-timeout):"
    )


@pytest.mark.parametrize("value", ["0", "-5", "soon", "nan"])
def test_the_start_timeout_must_be_a_positive_number_of_seconds(value):
    completed = subprocess.run(
        [
            *(sys.executable, "-m", "profile_store.cli.launchers", "spark-standalone"),
            *("--start-timeout", value),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert (
        f"argument --start-timeout: expected a number of seconds above 0, got '{value}'"
        in completed.stderr
    )


def _environ_without_spark() -> dict[str, str]:
    """This environment without the suite's Spark variables (a user's shell has none)."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
