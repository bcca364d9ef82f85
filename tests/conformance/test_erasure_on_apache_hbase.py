"""An erasure batch on Apache HBase: the same run, and a report that claims what HBase did.

Two generated days (2 x 1,500 events) through every daily asset into the standalone Apache
HBase (its own table prefix, beside the other conformance modules' tables), two persons
forgotten, one run of ``erasure``. HBase queues a major compaction and answers at once, so the
reports say ``requested``; what reads return (the newest versions) is clean.
"""

from __future__ import annotations

import json
from datetime import date, timedelta

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize

from profile_assets.definitions import daily_assets
from profile_assets.erasure_assets import erasure
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.erasure.forget import forget
from profile_store.erasure.report import REPORTS
from profile_store.erasure.requests import GivenId, pending_requests
from profile_store.erasure.resolution import IdentityGraph
from profile_store.erasure.sketch_retention import id_hashes, retention
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import table_opener
from profile_store.profiles.table import PROFILE_TABLE
from resources import resources_from_env

D1 = date(2026, 11, 1)
DAYS = [D1 + timedelta(days=i) for i in range(2)]


@pytest.fixture(scope="module")
def erased(spark, apache_hbase, tmp_path_factory):
    root = tmp_path_factory.mktemp("apache_erasure_lake")
    generate_lake(root, len(DAYS), 1500, seed=47, start_date=D1)
    environment = {
        **apache_hbase.environment(),
        "HBASE_TABLE_PREFIX": "erasure",
        "PROFILES_LAKE_ROOT": str(root),
        "SPARK_SHUFFLE_PARTITIONS": "2",
    }
    resources = resources_from_env(environment)
    instance = DagsterInstance.ephemeral()
    hbase, storage = resources["hbase"], resources["lake"].storage()
    try:
        for day in DAYS:
            built = materialize(
                list(daily_assets), partition_key=day.isoformat(), resources=resources,
                instance=instance,
            )  # fmt: skip
            assert built.success
        events = pq.read_table(root / "events", columns=["user_id"]).column("user_id")
        graph = IdentityGraph.load(storage)
        # Two persons of one profile each (some ids of the lake resolve to over a hundred).
        forgotten = [
            user
            for user in sorted(set(events.to_pylist()))
            if len(graph.resolve([GivenId(user)], max_profiles=1000).profiles) == 1
        ][:2]
        opener = table_opener(hbase.pool(), PROFILE_TABLE)
        requests = [forget(storage, opener, [GivenId(user)]).request for user in forgotten]
        result = materialize([erasure], resources=resources, instance=instance)
        with hbase.connection() as connection:
            sketches = connection.table(SKETCH_TABLE)
            retaining = sum(
                retention(sketches, storage, day, id_hashes(forgotten)).rows_retaining
                for day in DAYS
            )
        yield {
            "result": result,
            "forgotten": forgotten,
            "reports": [
                json.loads((root / REPORTS / f"{r.request_id}.json").read_text()) for r in requests
            ],
            "pending": pending_requests(storage),
            "events": pq.read_table(root / "events", columns=["user_id"]).column("user_id"),
            "retaining": retaining,
        }
    finally:
        hbase.close()


def test_the_batch_completes_on_apache_hbase(erased):
    assert erased["result"].success and erased["pending"] == []
    assert {r["batch"]["batch_id"] for r in erased["reports"]} == {
        erased["reports"][0]["batch"]["batch_id"]
    }
    assert not set(erased["forgotten"]) & set(erased["events"].to_pylist())


def test_the_reports_say_the_major_compaction_was_requested_not_completed(erased):
    for report in erased["reports"]:
        assert report["batch"]["hbase_major_compaction"] == {
            "tables": ["profiles", "sketches"],
            "state": "requested",
        }


def test_what_reads_return_retains_no_forgotten_hash(erased):
    assert erased["retaining"] == 0
    assert all(r["batch"]["sketch_rows_checked"] > 0 for r in erased["reports"])
