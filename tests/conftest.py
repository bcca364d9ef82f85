"""Fixtures shared by the whole suite: one local Spark session for every test that needs it."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from resources.spark import local_spark_config

    builder = SparkSession.builder.appName("profiles-tests")
    for key, value in local_spark_config(shuffle_partitions=2).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
