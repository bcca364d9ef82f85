"""Reconciliation of the live path with the daily run: the same two days of events, once through
Kafka (the lake sink and the live profile job, then each day's daily run over the lake the sink
wrote) and once through the daily run alone, leave the same ``profiles`` table, cell by cell.

Each day is streamed before its daily run, so day 1's events reach ids never seen (rows of their
own) and day 2's reach the persons day 1's run compacted (cells spread over their rows).
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import happybase
import numpy as np
import pyarrow as pa
import pytest
from dagster import DagsterInstance, materialize
from landing_files import drive
from live_rows import table_opener

from profile_assets.compaction_assets import compacted_profiles
from profile_assets.identity_assets import identity_components, identity_edges
from profile_assets.raw_events import raw_events
from profile_store.event_bus.producer import EventProducer
from profile_store.event_bus.settings import EventBusSettings
from profile_store.event_bus.topics import ensure_topic
from profile_store.generator.lake import generate_lake
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.layout import SUCCESS_MARKER, landing_day
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.table import PROFILE_TABLE, UNSYNCED, ensure_table, is_live_qualifier
from profile_store.realtime.event_days import day_text, event_days
from profile_store.realtime.event_keys import keyed_lines
from profile_store.realtime.lake_sink import LakeSink, LakeSinkConfig
from profile_store.realtime.live_profiles import LiveProfiles, LiveProfilesConfig
from resources.hbase import HBaseResource
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAYS = ("2026-11-01", "2026-11-02")


def day_messages(root: Path, day: str) -> list[tuple[bytes, bytes]]:
    """A generated landing day's lines, keyed as the collector sends them, without those whose
    time names another day (the sink lands those in their own day, where ingest of this day
    quarantines them: not the same events for both paths)."""
    lines: list[bytes] = []
    for part in sorted((root / landing_day(day)).glob("*.jsonl.gz")):
        lines += gzip.decompress(part.read_bytes()).splitlines()
    noon = (date.fromisoformat(day) - date(1970, 1, 1)).days * 86_400_000 + 43_200_000
    days = event_days(pa.array(lines, pa.binary()), np.full(len(lines), noon, dtype=np.int64))
    kept = [line for line, own in zip(lines, days, strict=True) if day_text(int(own)) == day]
    return keyed_lines(kept)


def write_landing(root: Path, day: str, messages: list[tuple[bytes, bytes]]) -> None:
    """A landing day of exactly these lines, closed."""
    folder = root / landing_day(day)
    folder.mkdir(parents=True)
    (folder / "part-00000.jsonl.gz").write_bytes(
        gzip.compress(b"".join(value + b"\n" for _key, value in messages))
    )
    (folder / SUCCESS_MARKER).write_bytes(b"")


class DailyRun:
    """The daily assets of a day through compaction, over one lake and one gateway."""

    def __init__(self, root: Path, gateway: EmbeddedGateway) -> None:
        self.resources = {
            "spark": spark_resource_from_env({}),
            "lake": LakeResource(root=str(root)),
            "hbase": HBaseResource(host=gateway.host, port=gateway.port),
            "identity": IdentityResource(),
        }
        self.instance = DagsterInstance.ephemeral()

    def __call__(self, day: str) -> None:
        result = materialize(
            [raw_events, identity_edges, identity_components, compacted_profiles],
            partition_key=day,
            resources=self.resources,
            instance=self.instance,
        )
        assert result.success


def profiles_table(gateway: EmbeddedGateway) -> dict[bytes, dict[bytes, bytes]]:
    connection = happybase.Connection(**gateway.connection_kwargs())
    try:
        return dict(connection.table(PROFILE_TABLE).scan())
    finally:
        connection.close()


def live_cell_count(table: dict[bytes, dict[bytes, bytes]]) -> int:
    return sum(
        1
        for cells in table.values()
        for name in cells
        if name.startswith(UNSYNCED + b":") and is_live_qualifier(name.partition(b":")[2])
    )


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, list[tuple[bytes, bytes]]]:
    root = tmp_path_factory.mktemp("generated")
    generate_lake(root, len(DAYS), 1200, seed=29, start_date=date.fromisoformat(DAYS[0]))
    return {day: day_messages(root, day) for day in DAYS}


@pytest.fixture
def gateways(tmp_path) -> Iterator[tuple[EmbeddedGateway, EmbeddedGateway]]:
    with (
        EmbeddedGateway(tmp_path / "stream-hbase") as stream,
        EmbeddedGateway(tmp_path / "lake-only-hbase") as lake_only,
    ):
        yield stream, lake_only


def stream_day(
    bus: EventBusSettings,
    sink: LakeSink,
    job: LiveProfiles,
    storage: LocalLakeStorage,
    day: str,
    messages: list[tuple[bytes, bytes]],
) -> None:
    """Send a day's events; the sink lands and closes the day, the live job applies them."""
    with EventProducer(bus) as producer:
        producer.send(messages)
    total = job.progress.messages + len(messages)
    drive(lambda: job.step(0.2), lambda: job.progress.messages >= total)
    drive(lambda: sink.step(0.2), lambda: storage.exists(f"{landing_day(day)}/{SUCCESS_MARKER}"))


def test_the_stream_and_the_daily_run_write_exactly_the_profiles_of_the_daily_run_alone(
    spark, kafka_broker, generated, gateways, tmp_path
):
    stream_gateway, lake_only_gateway = gateways
    bus = EventBusSettings(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        topic=f"reconcile-{tmp_path.name}-{threading.get_ident()}",
        partitions=3,
    )
    ensure_topic(bus)
    connection = happybase.Connection(**stream_gateway.connection_kwargs())
    ensure_table(connection)
    stream_root = tmp_path / "stream-lake"
    storage = LocalLakeStorage(stream_root)
    sink = LakeSink(
        bus,
        storage,
        LakeSinkConfig(
            group_id="reconcile-sink",
            lateness=timedelta(0),
            flush_seconds=0.2,
            close_check_seconds=0.05,
        ),
    ).start()

    job = LiveProfiles(
        bus, table_opener(connection, PROFILE_TABLE), LiveProfilesConfig(group_id="reconcile-live")
    ).start()
    stream_run = DailyRun(stream_root, stream_gateway)
    live_before_runs = []
    try:
        for day in DAYS:
            stream_day(bus, sink, job, storage, day, generated[day])
            live_before_runs.append(live_cell_count(profiles_table(stream_gateway)))
            stream_run(day)
    finally:
        job.close()
        sink.close()
        connection.close()
    spreads = job.progress.spreads

    lake_only_root = tmp_path / "lake-only"
    lake_only_run = DailyRun(lake_only_root, lake_only_gateway)
    for day in DAYS:
        write_landing(lake_only_root, day, generated[day])
        lake_only_run(day)

    assert all(count > 0 for count in live_before_runs), "each day's events were live first"
    assert spreads > 0, "day 2's events reached persons of several rows"
    streamed, lake_only = profiles_table(stream_gateway), profiles_table(lake_only_gateway)
    assert live_cell_count(streamed) == 0
    assert streamed.keys() == lake_only.keys()
    for key, cells in lake_only.items():
        assert streamed[key] == cells, key
