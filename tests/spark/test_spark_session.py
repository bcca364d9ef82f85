"""The settings every Spark session of the project starts with."""

from __future__ import annotations

import re
from pathlib import Path

from profile_store.spark.session import C2_LATER, spark_config_from_env


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
