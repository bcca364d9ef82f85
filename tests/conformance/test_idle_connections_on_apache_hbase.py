"""Long days on Apache HBase: its Thrift server closes idle connections, and nothing fails.

HBase's Thrift-1 server closes a connection that sent nothing for
``hbase.thrift.server.socket.read.timeout`` (60 s by default): any asset with a minute of Spark
work between two HBase calls used to fail with ``TSocket read 0 bytes``. Here a second Thrift
server of the suite's Apache HBase closes them after two seconds, and a whole day runs with a
pause longer than that before the first HBase call of every step that makes one.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from datetime import date

import happybase
import pytest
from dagster import DagsterInstance, OpExecutionContext, materialize
from thriftpy2.transport import TTransportException

from profile_assets.definitions import daily_assets, defs
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import hbase_pool
from profile_store.hbase.settings import HBaseSettings
from profile_store.lake.layout import LANDING
from profile_store.launchers.apache_hbase import THRIFT_IDLE_TIMEOUT, ApacheHBase
from resources import resources_from_env
from resources.hbase import HBaseResource

IDLE_TIMEOUT_S = 2.0
DAY = "2026-11-01"
IDLED_IN: set[str] = set()
"""The steps whose first connection sat idle past the timeout."""


@pytest.fixture(scope="module")
def short_idle_port(apache_hbase: ApacheHBase) -> int:
    """A Thrift server of the suite's HBase that closes a connection idle for two seconds."""
    return apache_hbase.thrift_server(
        settings={THRIFT_IDLE_TIMEOUT: str(int(IDLE_TIMEOUT_S * 1000))}
    )


def idle_past_the_timeout() -> None:
    time.sleep(IDLE_TIMEOUT_S + 1.5)


def test_the_launchers_idle_timeout_closes_a_plain_happybase_connection(
    short_idle_port: int,
) -> None:
    connection = happybase.Connection("127.0.0.1", short_idle_port)
    connection.tables()
    idle_past_the_timeout()
    with pytest.raises(TTransportException):
        connection.tables()
    connection.close()


def test_a_pooled_connection_survives_apache_hbase_closing_it_while_idle(
    short_idle_port: int,
) -> None:
    settings = HBaseSettings(host="127.0.0.1", port=short_idle_port, pool_size=1)
    with hbase_pool(settings) as pool, pool.connection() as connection:
        connection.tables()
        idle_past_the_timeout()
        connection.tables()


class IdlingHBase(HBaseResource):
    """The pipeline's resource, idle past the server's timeout in the first connection each
    step takes, before its first call: the gap a long Spark step leaves between two HBase
    calls. (Once per step: the accuracy check alone takes a connection per answer.)"""

    @contextlib.contextmanager
    def connection(self) -> Iterator[happybase.Connection]:
        step = OpExecutionContext.get().op_handle.name
        with super().connection() as connection:
            if step not in IDLED_IN:
                IDLED_IN.add(step)
                idle_past_the_timeout()
            yield connection


def test_a_whole_day_runs_with_pauses_past_the_thrift_servers_idle_timeout(
    spark, short_idle_port: int, tmp_path
) -> None:
    # The landing files alone, as in test_pipeline_on_apache_hbase: the checks judge what the
    # pipeline wrote to HBase, not a small generated day against its answer key.
    generated, lake = tmp_path / "generated", tmp_path / "lake"
    generate_lake(generated, 1, 3_000, seed=11, start_date=date.fromisoformat(DAY))
    shutil.copytree(generated / LANDING, lake / LANDING)
    environment = {
        "PROFILES_LAKE_ROOT": str(lake),
        "SPARK_SHUFFLE_PARTITIONS": "2",
        "HBASE_THRIFT_HOST": "127.0.0.1",
        "HBASE_THRIFT_PORT": str(short_idle_port),
        "HBASE_TABLE_PREFIX": "idle",
    }
    resources = resources_from_env(environment)
    resources["hbase"] = IdlingHBase(**resources["hbase"].model_dump())
    try:
        result = materialize(
            [*daily_assets, *defs.asset_checks],
            partition_key=DAY,
            resources=resources,
            instance=DagsterInstance.ephemeral(),
        )
        assert result.success
        failed = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
        assert failed == []
        assert {"audience_sketches", "compacted_profiles"} <= IDLED_IN
    finally:
        resources["hbase"].close()
