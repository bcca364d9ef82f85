"""The daily pipeline on Apache HBase writes what it writes on the embedded gateway.

Two generated days run through every asset twice, once with ``HBASE_THRIFT_HOST`` pointing at
the standalone Apache HBase and once on the embedded gateway (each over its own copy of the
same landing files); then the ``sketches`` and ``profiles`` tables are compared cell by cell
(timestamps aside), and audience answers and profile reads through the product's own readers
must be identical.
"""

from __future__ import annotations

import shutil
from datetime import date

import happybase
import pytest
from dagster import DagsterInstance, materialize

from profile_assets.definitions import defs
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.generator.lake import generate_lake
from profile_store.hbase_client import table_opener
from profile_store.lake_layout import LANDING
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.table import PROFILE_TABLE
from resources import resources_from_env

DAYS = ("2026-11-01", "2026-11-02")
QUERIES = [
    {"app_id": "com.shopfast.android", "event_type": "view_item", "date_from": DAYS[0],
     "date_to": DAYS[1]},
    {
        "intersection": [
            {"app_id": "com.shopfast.android", "event_type": "view_item",
             "date_from": DAYS[0], "date_to": DAYS[1]},
            {"app_id": "com.shopfast.android", "event_type": "add_to_cart",
             "date_from": DAYS[0], "date_to": DAYS[1]},
        ]
    },
]  # fmt: skip


def run_days(environment: dict[str, str]) -> None:
    resources = resources_from_env(environment)
    instance = DagsterInstance.ephemeral()
    try:
        for day in DAYS:
            result = materialize(
                [*defs.assets, *defs.asset_checks],
                partition_key=day,
                resources=resources,
                instance=instance,
            )
            assert result.success, f"daily pipeline failed for {day}"
    finally:
        resources["hbase"].close()


def table_cells(connection: happybase.Connection, name: str) -> dict[bytes, dict[bytes, bytes]]:
    return dict(connection.table(name).scan(batch_size=2000))


@pytest.fixture(scope="module")
def both(spark, apache_hbase, tmp_path_factory):
    """(gateway connection, Apache HBase connection) after the same two days on each."""
    source = tmp_path_factory.mktemp("source_lake")
    generate_lake(source, len(DAYS), 3_000, seed=11, start_date=date.fromisoformat(DAYS[0]))
    lakes = {}
    for backend in ("gateway", "apache"):
        lakes[backend] = tmp_path_factory.mktemp(f"{backend}_lake")
        shutil.copytree(source / LANDING, lakes[backend] / LANDING)
    gateway_dir = tmp_path_factory.mktemp("gateway_hbase")
    common = {"SPARK_SHUFFLE_PARTITIONS": "2"}
    run_days({**common, "PROFILES_LAKE_ROOT": str(lakes["gateway"]),
              "PROFILES_HBASE_DATA_DIR": str(gateway_dir)})  # fmt: skip
    run_days({**common, "PROFILES_LAKE_ROOT": str(lakes["apache"]), **apache_hbase.environment()})

    from profile_store.hbase_gateway.process import EmbeddedGateway

    with EmbeddedGateway(gateway_dir) as gateway:
        pools = {
            "gateway": happybase.ConnectionPool(2, **gateway.connection_kwargs()),
            "apache": happybase.ConnectionPool(2, **apache_hbase.connection_kwargs()),
        }
        yield pools


@pytest.mark.parametrize("table", [SKETCH_TABLE, PROFILE_TABLE])
def test_every_cell_the_pipeline_writes_is_the_same_on_both(both, table: str) -> None:
    with both["gateway"].connection() as g, both["apache"].connection() as a:
        gateway_cells, apache_cells = table_cells(g, table), table_cells(a, table)
    assert len(gateway_cells) > 100
    assert gateway_cells.keys() == apache_cells.keys()
    differing = [key for key in gateway_cells if gateway_cells[key] != apache_cells[key]]
    assert differing == [], f"{len(differing)} rows differ, e.g. {differing[:3]}"


@pytest.mark.parametrize("query", QUERIES, ids=["leaf", "intersection"])
def test_audience_answers_are_the_same_on_both(both, query: dict) -> None:
    answers = {
        backend: AudienceEngine(table_opener(pool, SKETCH_TABLE)).estimate(query)
        for backend, pool in both.items()
    }
    assert answers["gateway"].estimate > 0
    assert answers["gateway"].estimate == answers["apache"].estimate
    assert answers["gateway"].lower_95 == answers["apache"].lower_95
    assert answers["gateway"].upper_95 == answers["apache"].upper_95


def test_profile_reads_are_the_same_on_both(both) -> None:
    with both["gateway"].connection() as g:
        keys = [key for key, _ in g.table(PROFILE_TABLE).scan(row_prefix=b"p|", limit=40)]
    ids = [key.decode()[2:] for key in keys]
    readers = {b: ProfileReader(table_opener(pool, PROFILE_TABLE)) for b, pool in both.items()}
    now = 1_790_000_000_000
    for id in ids:
        views = {b: reader.profile(id, now_ms=now) for b, reader in readers.items()}
        assert views["gateway"] is not None
        assert views["gateway"] == views["apache"]
        assert readers["gateway"].segments(id, now_ms=now) == readers["apache"].segments(
            id, now_ms=now
        )
