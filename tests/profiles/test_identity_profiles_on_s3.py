"""The identity and profile areas with the lake on S3 (a moto server), through the real pipelines.

What the pipelines ask the lake outside Spark (is there the previous day's assignment or profile
state, a later snapshot, which segment feed days exist, ...) decides between incremental and full
work, so S3 must answer it as a disk does, whichever connector wrote the objects. Spark keeps
reading and writing a local directory here; before every such question that directory is
mirrored into the bucket the way S3A and EMRFS leave Spark output (the objects plus their
directory markers, ``dir/`` and ``dir_$folder$``: EMRFS's cannot be produced on this machine), the
real ``S3LakeStorage`` answers from the bucket and the pipeline goes on with that answer. The
disk's answer to the same question is recorded beside it; any difference fails. Spark's own S3A
reads and writes are tested end to end in ``tests/real_spark/test_cluster_with_s3a_lake.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path

import boto3
import pyarrow.parquet as pq
import pytest

from profile_store.events.ingest import ingest_day
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import hbase_pool, table_opener
from profile_store.hbase.settings import HBaseSettings, ThriftAddress
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.identity.pipeline import build_day_edges, update_components
from profile_store.identity.rules import BridgingRules
from profile_store.lake.layout import events_day
from profile_store.lake.storage import LakeFile, LocalLakeStorage, S3LakeStorage
from profile_store.profiles.pipeline import CompactionSettings, compact_day
from profile_store.profiles.segment_rules import DEFAULT_RULES, parse_rules
from profile_store.profiles.table import PROFILE_TABLE, ensure_table

BUCKET = "identity-lake"
DAYS = (date(2026, 11, 1), date(2026, 11, 2))


class MirroredLake:
    """A ``LakeStorage`` whose non-Spark questions are answered by S3, checked against the disk."""

    def __init__(self, local: LocalLakeStorage, s3: S3LakeStorage) -> None:
        self.local = local
        self.s3 = s3
        self.root = s3.root
        self.questions: list[tuple[str, str]] = []
        self.differences: list[tuple[str, str, object, object]] = []
        self._mirrored: dict[str, tuple[int, int] | None] = {}

    def spark_uri(self, relative: str = "") -> str:
        return self.local.spark_uri(relative)

    def _object_key(self, relative: str) -> str:
        return self.s3._key(relative) + ("/" if relative.endswith("/") else "")

    def _mirror(self) -> None:
        root = Path(self.local.root)
        wanted: dict[str, tuple[int, int] | None] = {}
        for path in root.rglob("*"):
            relative = path.relative_to(root).as_posix()
            if path.is_dir():
                wanted[relative + "/"] = None
                wanted[relative + "_$folder$"] = None
            else:
                stat = path.stat()
                wanted[relative] = (stat.st_size, stat.st_mtime_ns)
        for relative, signature in wanted.items():
            if relative not in self._mirrored or self._mirrored[relative] != signature:
                body = b"" if signature is None else (root / relative).read_bytes()
                self.s3.client.put_object(Bucket=BUCKET, Key=self._object_key(relative), Body=body)
        for relative in set(self._mirrored) - set(wanted):
            self.s3.client.delete_object(Bucket=BUCKET, Key=self._object_key(relative))
        self._mirrored = wanted

    def _ask(self, question: str, relative: str, answer: Callable, comparable: Callable):
        self._mirror()
        on_s3, on_disk = answer(self.s3), answer(self.local)
        self.questions.append((question, relative))
        if comparable(on_s3) != comparable(on_disk):
            self.differences.append((question, relative, on_s3, on_disk))
        return on_s3

    def exists(self, relative: str) -> bool:
        return self._ask("exists", relative, lambda s: s.exists(relative), bool)

    def list_files(self, relative: str) -> list[LakeFile]:
        return self._ask(
            "list_files",
            relative,
            lambda s: s.list_files(relative),
            lambda files: [(f.path, f.size) for f in files],
        )

    def read_bytes(self, relative: str) -> bytes:
        return self._ask("read_bytes", relative, lambda s: s.read_bytes(relative), bytes)

    def write_bytes(self, relative: str, data: bytes) -> None:
        self.local.write_bytes(relative, data)

    def delete_tree(self, relative: str) -> None:
        self.local.delete_tree(relative)


def write_feed(root: Path, day: date, profile: str) -> None:
    feed = root / "segment_feed" / f"date={day.isoformat()}"
    feed.mkdir(parents=True)
    line = '{"profile": "%s", "segment": "crm_gold", "expires_at": "2031-01-01T00:00:00Z"}\n'
    (feed / "part-0.jsonl").write_text(line % profile)


@pytest.fixture(scope="module")
def runs(spark, s3_endpoint, tmp_path_factory):
    """Two days of ingest, identity edges, components and compaction, then a full recompute."""
    root = tmp_path_factory.mktemp("identity_s3_lake")
    generate_lake(root, len(DAYS), 3_000, seed=21, start_date=DAYS[0])
    client = boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    client.create_bucket(Bucket=BUCKET)
    lake = MirroredLake(LocalLakeStorage(root), S3LakeStorage(f"s3://{BUCKET}/lake", client))
    settings = CompactionSettings(rules=parse_rules(DEFAULT_RULES))
    outcome = {"components": {}, "compaction": {}}
    with EmbeddedGateway(tmp_path_factory.mktemp("identity_s3_hbase")) as gateway:
        address = ThriftAddress(gateway.host, gateway.port)
        with hbase_pool(HBaseSettings(host=gateway.host, port=gateway.port)) as pool:
            with pool.connection() as connection:
                ensure_table(connection, PROFILE_TABLE)
            profiles = table_opener(pool, PROFILE_TABLE)
            for day in DAYS:
                ingest_day(spark, lake, day)
                if day == DAYS[0]:
                    events = pq.read_table(root / events_day(day), columns=["user_id"])
                    write_feed(root, day, events.column("user_id")[0].as_py())
                build_day_edges(spark, lake, day, BridgingRules())
                outcome["components"][day] = update_components(spark, lake, day).mode
                summary = compact_day(spark, lake, profiles, address, day, settings)
                outcome["compaction"][day] = summary
            last = DAYS[-1]
            outcome["full components"] = update_components(spark, lake, last, full_recompute=True)
            outcome["full compaction"] = compact_day(
                spark, lake, profiles, address, last, replace(settings, full_recompute=True)
            )
    outcome["lake"] = lake
    return outcome


def test_every_question_the_pipelines_ask_is_answered_on_s3_as_on_disk(runs):
    lake = runs["lake"]
    asked = {relative.split("/")[0] for _, relative in lake.questions}
    assert {"identity_components", "profile_segments", "profile_counters", "segment_feed"} <= asked
    assert lake.differences == []


def test_the_second_day_finds_the_first_on_s3_and_runs_incrementally(runs):
    first, second = DAYS
    assert runs["components"] == {first: "full", second: "incremental"}
    modes = {day: summary.mode for day, summary in runs["compaction"].items()}
    assert modes == {first: "full", second: "incremental"}


def test_a_full_recompute_on_s3_finds_every_feed_day_and_agrees_with_the_increments(runs):
    full, incremental = runs["full compaction"], runs["compaction"][DAYS[-1]]
    assert runs["full components"].mode == "full"
    assert full.mode == "full"
    assert full.segment_members["crm_gold"] == 1
    assert full.segment_members == incremental.segment_members
