"""The daily pipeline on Apache HBase writes what it writes on the embedded gateway.

Two generated days run through every asset twice, once with ``HBASE_THRIFT_HOST`` pointing at
the standalone Apache HBase and once on the embedded gateway with the profile rows loaded in
bulk (each over its own copy of the same landing files); then the ``sketches`` and ``profiles``
tables are compared cell by cell (timestamps aside), and audience answers and profile reads
through the product's own readers must be identical.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import happybase
import pytest
from dagster import DagsterInstance, materialize
from fastapi.testclient import TestClient

from profile_assets.definitions import daily_assets, defs
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import table_opener
from profile_store.lake.layout import LANDING
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.table import PROFILE_TABLE
from profile_store.service.app import create_app
from profile_store.service.tenants import Tenants
from resources import resources_from_env

DAYS = ("2026-11-01", "2026-11-02")
APP = "com.shopfast.android"
API_KEY = "conformance-key-0123456789"
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


class Backend:
    """One HBase the pipeline wrote to: its pool, and the environment that points tools at it."""

    def __init__(self, pool: happybase.ConnectionPool) -> None:
        self.pool = pool
        with pool.connection() as connection:
            self.environment = {
                "HBASE_THRIFT_HOST": connection.host,
                "HBASE_THRIFT_PORT": str(connection.port),
            }

    def engine(self) -> AudienceEngine:
        return AudienceEngine(table_opener(self.pool, SKETCH_TABLE))

    def reader(self) -> ProfileReader:
        return ProfileReader(table_opener(self.pool, PROFILE_TABLE))

    def connection(self):
        return self.pool.connection()


def without_timing(body: dict) -> dict:
    return {key: value for key, value in body.items() if key != "elapsed_ms"}


def run_days(environment: dict[str, str], run_config: dict | None = None) -> None:
    resources = resources_from_env(environment)
    instance = DagsterInstance.ephemeral()
    try:
        for day in DAYS:
            result = materialize(
                [*daily_assets, *defs.asset_checks],
                partition_key=day,
                resources=resources,
                instance=instance,
                run_config=run_config,
            )
            assert result.success, f"daily pipeline failed for {day}"
            failed = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
            assert failed == [], f"{day}: checks did not pass"
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
    # The gateway's profile rows loaded in bulk, Apache HBase's put by Thrift (its only path).
    in_bulk = {"ops": {"compacted_profiles": {"config": {"profile_write": "bulk"}}}}
    run_days({**common, "PROFILES_LAKE_ROOT": str(lakes["gateway"]),
              "PROFILES_HBASE_DATA_DIR": str(gateway_dir)}, in_bulk)  # fmt: skip
    run_days({**common, "PROFILES_LAKE_ROOT": str(lakes["apache"]), **apache_hbase.environment()})

    from profile_store.hbase_gateway.process import EmbeddedGateway

    with EmbeddedGateway(gateway_dir) as gateway:
        yield {
            "gateway": Backend(happybase.ConnectionPool(2, **gateway.connection_kwargs())),
            "apache": Backend(happybase.ConnectionPool(2, **apache_hbase.connection_kwargs())),
        }


@pytest.fixture(scope="module")
def services(both):
    """The HTTP service (audiences and profiles) over each backend."""
    tenants = Tenants.from_config(
        {"tenants": [{"name": "shop", "api_keys": [API_KEY], "app_ids": [APP]}]}
    )
    clients = {}
    with contextlib.ExitStack() as stack:
        for name, backend in both.items():
            app = create_app(backend.engine(), tenants, backend.reader())
            clients[name] = stack.enter_context(TestClient(app, raise_server_exceptions=False))
        yield clients


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
    answers = {name: backend.engine().estimate(query) for name, backend in both.items()}
    assert answers["gateway"].estimate > 0
    assert answers["gateway"].estimate == answers["apache"].estimate
    assert answers["gateway"].lower_95 == answers["apache"].lower_95
    assert answers["gateway"].upper_95 == answers["apache"].upper_95


def test_profile_reads_are_the_same_on_both(both) -> None:
    with both["gateway"].connection() as g:
        keys = [key for key, _ in g.table(PROFILE_TABLE).scan(row_prefix=b"p|", limit=40)]
    ids = [key.decode()[2:] for key in keys]
    readers = {name: backend.reader() for name, backend in both.items()}
    now = 1_790_000_000_000
    for id in ids:
        views = {b: reader.profile(id, now_ms=now) for b, reader in readers.items()}
        assert views["gateway"] is not None
        assert views["gateway"] == views["apache"]
        assert readers["gateway"].segments(id, now_ms=now) == readers["apache"].segments(
            id, now_ms=now
        )


@pytest.mark.parametrize("query", QUERIES, ids=["leaf", "intersection"])
def test_the_http_service_answers_the_same_on_both(services, query: dict) -> None:
    bodies = {}
    for name, client in services.items():
        answer = client.post("/v1/audiences/estimate", json=query, headers={"X-API-Key": API_KEY})
        assert answer.status_code == 200, answer.text
        bodies[name] = without_timing(answer.json())
    assert bodies["gateway"] == bodies["apache"]


def test_the_http_profile_reads_are_the_same_on_both(both, services) -> None:
    with both["gateway"].connection() as g:
        keys = [key for key, _ in g.table(PROFILE_TABLE).scan(row_prefix=b"p|", limit=10)]
    for key in keys:
        path = f"/v1/profiles/{key.decode()[2:]}"
        answers = {
            name: client.get(path, headers={"X-API-Key": API_KEY})
            for name, client in services.items()
        }
        assert answers["gateway"].status_code == 200
        gateway, apache = (answers[name].json() for name in ("gateway", "apache"))
        # Read a few milliseconds apart: the time of the read and the decayed counters differ.
        for moment in ("now", "now_ms"):
            gateway.pop(moment), apache.pop(moment)
        gateway_counters, apache_counters = gateway.pop("counters"), apache.pop("counters")
        assert gateway == apache
        assert gateway_counters.keys() == apache_counters.keys()
        for event, value in gateway_counters.items():
            assert value == pytest.approx(apache_counters[event], rel=1e-6)


@pytest.mark.parametrize("query", QUERIES, ids=["leaf", "intersection"])
def test_the_cli_answers_the_same_on_both(both, tmp_path, query: dict) -> None:
    query_file = tmp_path / "query.json"
    query_file.write_text(json.dumps(query))
    outputs = {}
    for name, backend in both.items():
        completed = subprocess.run(
            [str(Path(sys.executable).with_name("profiles")), "audience", "estimate",
             str(query_file), "--json"],
            env={**os.environ, **backend.environment},
            capture_output=True,
            text=True,
            timeout=120,
        )  # fmt: skip
        assert completed.returncode == 0, completed.stderr
        outputs[name] = without_timing(json.loads(completed.stdout))
    assert outputs["gateway"] == outputs["apache"]
