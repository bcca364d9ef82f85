"""Spark sessions as every process of the project starts them: the pipeline's runs, ``profiles
import``, the tests and the benchmarks, so that each runs Spark the same way.

``SPARK_MASTER`` picks the cluster (``local[*]`` by default); ``SPARK_CONF_JSON`` adds or
overrides any setting; a lake (or another source) on S3 read as ``s3a://`` adds the S3A
connector's settings (``profile_store.spark.s3a``).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pyspark.sql import SparkSession

from profile_store.settings.definitions import SHUFFLE_PARTITIONS
from profile_store.spark.function_lookups import remember_function_lookups
from profile_store.spark.s3a import s3a_config

LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")
# HotSpot's thresholds for a method's optimising (tier 4) compilation, ten times the defaults.
C2_LATER = (
    "-XX:Tier4InvocationThreshold=50000",
    "-XX:Tier4MinInvocationThreshold=6000",
    "-XX:Tier4CompileThreshold=150000",
    "-XX:Tier4BackEdgeThreshold=400000",
)
# The driver's heap. The JVM's resident memory follows the heap it may grow to, but a smaller
# heap makes the collector work harder in local mode, where the driver runs the tasks
# (docs/benchmarks.md, "The driver's resident memory").
DRIVER_MEMORY = "4g"
# glibc's malloc arenas for the driver JVM's threads (JIT compilers, collector, Netty): by
# default up to eight per core, each holding on to memory its thread freed. Hadoop caps them too.
MALLOC_ARENAS = "2"


def local_spark_config(
    master: str = "local[*]", shuffle_partitions: int = 8, driver_memory: str = DRIVER_MEMORY
) -> dict[str, str]:
    """Settings every session needs, whatever the master: UTC days and native sketch bytes."""
    return {
        "spark.master": master,
        "spark.app.name": "adtech-profiles",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(shuffle_partitions),
        "spark.sql.adaptive.enabled": "true",
        # Sketch aggregates keep one sketch object per group; Spark's default falls back to
        # sorting the task's rows after 128 groups, which a day of audience combinations
        # (thousands of groups) always hits. Small groups' sketches take a few hundred bytes.
        "spark.sql.objectHashAggregate.sortBased.fallbackThreshold": "16384",
        # A day's compaction joins the state with its rewritten members several times; at
        # Spark's 10 MB default those are shuffled sort-merge joins, at 64 MB the members' side
        # is broadcast instead, which saves a shuffle of the state per join.
        "spark.sql.autoBroadcastJoinThreshold": str(64 * 1024 * 1024),
        # Cached frames (the day's checked landing lines above all) are mostly distinct
        # strings, which the cache's column encodings barely shrink: compressing them costs
        # more than twice the CPU of caching them, for a few percent of memory.
        "spark.sql.inMemoryColumnarStorage.compressed": "false",
        # Compiled query code, by its source: a day's queries repeat much of it (the same
        # scans, projections and aggregates in several jobs, and again the next day in the
        # same process), and Spark's 100 entries evict about half of what would be reused.
        # Figures for both settings: docs/benchmarks.md, "Cached frames uncompressed".
        "spark.sql.codegen.cache.maxEntries": "1000",
        "spark.driver.memory": driver_memory,
        # PySpark records the Python call site of every Column operation for error messages,
        # at about seven JVM round trips each: building a day's plans (thousands of Column
        # operations, before any job runs) took twice as long with it.
        "spark.python.sql.dataFrameDebugging.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        # The throughput collector: on a few cores G1's concurrent work competes with the
        # tasks for the same CPUs, and a driver that lives for one run never needs G1's short
        # pauses. The JIT's optimising compiler (C2) is held back to methods ten times hotter
        # than its defaults: every query's generated code is new code, most of which C2
        # compiled only to run it a few thousand times more (docs/benchmarks.md).
        "spark.driver.extraJavaOptions": " ".join(
            (
                f"-Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}",
                "-XX:+UseParallelGC",
                *C2_LATER,
            )
        ),
    }


def spark_config_from_env(
    env: Mapping[str, str] | None = None, also_reads: Sequence[str] = ()
) -> dict[str, str]:
    """``SPARK_MASTER`` picks the cluster; ``SPARK_CONF_JSON`` adds or overrides any setting.

    A lake (or a source in ``also_reads``) on S3 adds the S3A connector's settings.
    """
    env = dict(os.environ if env is None else env)
    config = local_spark_config(
        master=env.get("SPARK_MASTER", "local[*]"),
        shuffle_partitions=SHUFFLE_PARTITIONS.read(env),
        driver_memory=env.get("SPARK_DRIVER_MEMORY", DRIVER_MEMORY),
    )
    if config["spark.master"].startswith("local"):
        # Local Python workers run this project's interpreter, whatever is first on PATH.
        config["spark.pyspark.python"] = sys.executable
    else:
        config["spark.ui.enabled"] = "true"
    config.update(s3a_config(env, also_reads))
    extra = env.get("SPARK_CONF_JSON")
    if extra:
        try:
            overrides = json.loads(extra)
        except json.JSONDecodeError as error:
            raise ValueError(f"SPARK_CONF_JSON: not valid JSON ({error})") from error
        if not isinstance(overrides, dict):
            raise ValueError("SPARK_CONF_JSON: expected a JSON object of Spark settings")
        config.update({str(k): str(v) for k, v in overrides.items()})
    return config


def prepare_this_process(config: Mapping[str, str]) -> None:
    """What Spark reads from this process rather than ``config``: PySpark's function lookups
    (``function_lookups``) and the environment the driver JVM (started by this process, on this
    machine, whatever the master) inherits."""
    remember_function_lookups()
    os.environ.setdefault("MALLOC_ARENA_MAX", MALLOC_ARENAS)
    if config["spark.master"].startswith("local"):
        # PySpark picks the local worker interpreter from this variable alone.
        os.environ.setdefault("PYSPARK_PYTHON", config["spark.pyspark.python"])
        # Everything stays on this machine: bind to loopback (Spark warns on every start when
        # the host name resolves to loopback and SPARK_LOCAL_IP is unset).
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def spark_session_from_env(
    env: Mapping[str, str] | None = None, also_reads: Sequence[str] = ()
) -> SparkSession:
    """A session (this process's, if one runs) configured by ``spark_config_from_env``."""
    config = spark_config_from_env(env, also_reads)
    prepare_this_process(config)
    builder = SparkSession.builder
    for key, value in config.items():
        builder = builder.config(key, value)
    return builder.getOrCreate()
