"""The settings every Spark session of the project starts with."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from profile_store.spark.session import (
    C2_LATER,
    DRIVER_MEMORY,
    MALLOC_ARENAS,
    prepare_this_process,
    spark_config_from_env,
)


def test_the_drivers_logging_file_ships_beside_the_settings():
    options = spark_config_from_env({})["spark.driver.extraJavaOptions"]
    uri = re.search(r"-Dlog4j2\.configurationFile=file://(\S+)", options).group(1)
    assert Path(uri).is_file()


def test_days_are_utc_days_whatever_the_machines_zone():
    assert spark_config_from_env({})["spark.sql.session.timeZone"] == "UTC"


def test_spark_conf_json_overrides_any_setting():
    config = spark_config_from_env({"SPARK_CONF_JSON": '{"spark.sql.shuffle.partitions": 3}'})
    assert config["spark.sql.shuffle.partitions"] == "3"


def test_the_running_driver_holds_its_optimising_compiler_back(spark):
    runtime = spark._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    arguments = set(runtime.getInputArguments())
    assert set(C2_LATER) <= arguments
    assert "-XX:Tier4InvocationThreshold=50000" in C2_LATER


def test_the_drivers_heap_is_spark_driver_memory_or_the_projects_default():
    assert spark_config_from_env({})["spark.driver.memory"] == DRIVER_MEMORY
    config = spark_config_from_env({"SPARK_DRIVER_MEMORY": "6g"})
    assert config["spark.driver.memory"] == "6g"


@pytest.fixture
def process_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """What ``prepare_this_process`` sets in this process's environment, restored afterwards."""
    for name in ("MALLOC_ARENA_MAX", "PYSPARK_PYTHON", "SPARK_LOCAL_IP"):
        if name in os.environ:
            monkeypatch.setenv(name, os.environ[name])
        else:
            monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_driver_jvm_inherits_a_cap_on_mallocs_arenas(process_env: pytest.MonkeyPatch):
    process_env.delenv("MALLOC_ARENA_MAX", raising=False)
    prepare_this_process(spark_config_from_env({}))
    assert os.environ["MALLOC_ARENA_MAX"] == MALLOC_ARENAS


def test_a_malloc_arena_cap_set_by_the_user_is_kept(process_env: pytest.MonkeyPatch):
    process_env.setenv("MALLOC_ARENA_MAX", "8")
    prepare_this_process(spark_config_from_env({}))
    assert os.environ["MALLOC_ARENA_MAX"] == "8"
