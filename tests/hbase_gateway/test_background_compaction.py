"""The embedded store does what HBase's compactions do: rewritten cells do not pile up."""

from __future__ import annotations

import sqlite3
import time
from datetime import date
from pathlib import Path

import happybase
from dagster import DagsterInstance, materialize
from gateway_sockets import wait_for

from profile_assets.audience_assets import attribute_stats, audience_sketches, trimmed_attributes
from profile_assets.raw_events import raw_events
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.generator.lake import generate_lake
from profile_store.hbase_gateway.compaction import FORCE_AFTER
from profile_store.hbase_gateway.data_dir import DB_FILE
from profile_store.hbase_gateway.process import EmbeddedGateway
from resources.hbase import HBaseResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAY = "2026-11-01"


def stored_cells(data_dir: Path, table: str) -> int:
    """Every cell version the store holds for ``table``, read beside the running gateway."""
    with sqlite3.connect(f"file:{data_dir / DB_FILE}?mode=ro", uri=True) as conn:
        (table_id,) = conn.execute(
            "SELECT id FROM hbase_tables WHERE name = ?", (table.encode(),)
        ).fetchone()
        return conn.execute(f"SELECT count(*) FROM cells_{table_id}").fetchone()[0]


def live_cells(table: happybase.Table) -> int:
    return sum(len(cells) for _, cells in table.scan())


def test_rewritten_rows_are_compacted_in_the_background_and_reads_never_change(tmp_path):
    args = ("--compact-after-cells", "1000", "--compact-interval", "0.5")
    with EmbeddedGateway(tmp_path, server_args=args) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", {"f": {"max_versions": 1}, "g": {"max_versions": 2}})
        table = connection.table("t")
        for version in range(6):
            with table.batch(batch_size=500) as batch:
                for row in range(1_000):
                    batch.put(b"r%05d" % row, {b"f:a": b"%d" % version, b"g:b": b"%d" % version})
            time.sleep(0.002)  # each rewrite a later millisecond: a new version
            assert table.row(b"r00042") == {b"f:a": b"%d" % version, b"g:b": b"%d" % version}
        assert wait_for(lambda: stored_cells(tmp_path, "t") <= 3_000)  # f: 1 version, g: 2
        assert table.cells(b"r00042", b"g:b", versions=5) == [b"5", b"4"]
        assert live_cells(table) == 2_000
        connection.close()


def test_writes_through_worker_processes_are_compacted_once_they_pause(tmp_path):
    """The compactor is a process of its own: it sees the workers' writes in the store's
    written count, and waits while that count keeps moving."""
    args = ("--compact-after-cells", "1000", "--compact-interval", "0.2", "--compact-quiet", "2")
    with EmbeddedGateway(tmp_path, workers=2, server_args=args) as gateway:
        connections = [happybase.Connection(**gateway.connection_kwargs()) for _ in range(2)]
        connections[0].create_table("t", {"f": {"max_versions": 1}})
        # 300 rows rewritten every 0.3 s: due from the 4th round on (1,000 cells), never
        # FORCE_AFTER times due (2,000), never quiet for 2 s, so nothing is compacted meanwhile
        assert FORCE_AFTER * 1_000 > 6 * 300
        for version in range(6):
            with connections[version % 2].table("t").batch() as batch:
                for row in range(300):
                    batch.put(b"r%05d" % row, {b"f:a": b"%d" % version})
            time.sleep(0.3)
        assert stored_cells(tmp_path, "t") == 1_800
        assert "compacted t" not in gateway.log_path.read_text()
        assert wait_for(lambda: stored_cells(tmp_path, "t") == 300, timeout_s=20)
        # the line is logged after the compaction commits, so it may trail the count a little
        logged = "compacted t: 1800 stored cells -> 300"
        assert wait_for(lambda: logged in gateway.log_path.read_text(), timeout_s=5)
        assert connections[1].table("t").row(b"r00042") == {b"f:a": b"5"}
        for connection in connections:
            connection.close()


def test_background_compaction_can_be_turned_off(tmp_path):
    with EmbeddedGateway(tmp_path, server_args=("--compact-after-cells", "0")) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", {"f": {"max_versions": 1}})
        table = connection.table("t")
        for version in range(3):
            table.put(b"r", {b"f:a": b"%d" % version})
            time.sleep(0.002)
        time.sleep(1)
        assert stored_cells(tmp_path, "t") == 3  # kept until a compaction is asked for
        connection.compact_table("t")
        assert stored_cells(tmp_path, "t") == 1
        connection.close()


def test_rematerializing_a_days_sketches_keeps_the_store_near_its_live_size(spark, tmp_path):
    generate_lake(tmp_path / "lake", 1, 20_000, seed=3, start_date=date.fromisoformat(DAY))
    hbase_dir = tmp_path / "hbase"
    hbase = HBaseResource(data_dir=str(hbase_dir))
    resources = {
        "spark": spark_resource_from_env({}),
        "lake": LakeResource(root=str(tmp_path / "lake")),
        "hbase": hbase,
    }
    instance = DagsterInstance.ephemeral()
    try:
        assets = [raw_events, attribute_stats, trimmed_attributes, audience_sketches]
        for run in range(4):  # the day, then its sketches three more times
            selection = assets if run == 0 else [audience_sketches]
            result = materialize(
                selection, partition_key=DAY, resources=resources, instance=instance
            )
            assert result.success
        with hbase.connection() as connection:
            live = live_cells(connection.table(SKETCH_TABLE))
        assert live > 1_000
        # The gateway compacts in the background: a bound for a machine under the whole suite's
        # load (30 s was missed at a load average of 14 on two cores), not a speed.
        near_live = lambda: stored_cells(hbase_dir, SKETCH_TABLE) <= 1.5 * live  # noqa: E731
        assert wait_for(near_live, timeout_s=300), (stored_cells(hbase_dir, SKETCH_TABLE), live)
    finally:
        hbase.close()
