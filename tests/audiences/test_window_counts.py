"""The accuracy check's exact side from each day's leaf counts: the same catalog and the same
user sets as the events give, each day counted once while its files stay."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from profile_store.audiences import leaf_counts
from profile_store.audiences.attribute_stats import TrimRule, daily_attribute_stats, trim_decisions
from profile_store.audiences.exact import EventsExactSide, counted_leaves
from profile_store.audiences.query import Leaf, leaf_identity, leaves, parse_query
from profile_store.audiences.query_sampler import AskedTrees, sample_queries
from profile_store.audiences.window_counts import CountedWindow
from profile_store.audiences.window_inputs import window_inputs
from profile_store.events.ingest import ingest_day
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.generator.lake import generate_lake
from profile_store.lake.layout import (
    AUDIENCE_LEAF_COUNTS,
    TRIMMED_ATTRIBUTES,
    day_dir,
    events_day,
)
from profile_store.lake.storage import LocalLakeStorage

FIRST = date(2026, 9, 1)
DAYS = [FIRST + timedelta(days=k) for k in range(3)]


def _decide(spark, storage, day: date) -> None:
    events = spark.read.schema(EVENTS_SCHEMA).parquet(storage.spark_uri(events_day(day)))
    stats = daily_attribute_stats(events).withColumn("date", F.lit(day.isoformat()))
    trim_decisions(stats, TrimRule(), 1).write.mode("overwrite").parquet(
        storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, day))
    )


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory) -> Path:
    """Three generated days of clean events, each with its trim decisions."""
    root = tmp_path_factory.mktemp("counted-window")
    generate_lake(root, len(DAYS), 4_000, 11, start_date=FIRST)
    storage = LocalLakeStorage(root)
    for day in DAYS:
        ingest_day(spark, storage, day)
        _decide(spark, storage, day)
    return root


@pytest.fixture
def storage(lake, tmp_path) -> LocalLakeStorage:
    """A copy of the lake each test may rewrite."""
    import shutil

    shutil.copytree(lake, tmp_path / "lake")
    return LocalLakeStorage(tmp_path / "lake")


def _both_sides(spark, storage):
    events, decisions = window_inputs(spark, storage, DAYS)
    return CountedWindow(spark, storage, DAYS, events), EventsExactSide(spark, events), decisions


def _mix(catalog) -> list[Leaf]:
    trees = sample_queries(catalog, DAYS, 150, 5, AskedTrees())
    found = [leaf for tree in trees for leaf in leaves(parse_query(tree))]
    return found + counted_leaves(found)


def _same_users(counted, expected) -> None:
    assert counted.keys() == expected.keys()
    for identity in expected:
        assert counted[identity].tolist() == expected[identity].tolist(), identity


def test_the_catalog_from_the_counts_is_the_catalog_of_the_events(spark, storage):
    counted, from_events, decisions = _both_sides(spark, storage)
    catalog = counted.catalog(decisions)
    assert catalog == from_events.catalog(decisions)
    assert any(entry.attributes for entry in catalog)


def test_every_leaf_of_a_mix_has_the_users_the_events_give(spark, storage):
    counted, from_events, decisions = _both_sides(spark, storage)
    mix = _mix(counted.catalog(decisions))
    assert any(leaf.min_count for leaf in mix) and any(leaf.attributes for leaf in mix)
    assert any(leaf.date_from != leaf.date_to for leaf in mix)
    _same_users(counted.leaf_users(mix), from_events.leaf_users(mix))


def test_a_day_is_counted_once_while_its_files_stay(spark, storage, monkeypatch):
    _both_sides(spark, storage)  # counts the three days

    def recount(*args, **kwargs):
        raise AssertionError("a day counted again though its files did not change")

    monkeypatch.setattr(leaf_counts, "count_day", recount)
    counted, from_events, decisions = _both_sides(spark, storage)
    mix = _mix(counted.catalog(decisions))
    _same_users(counted.leaf_users(mix), from_events.leaf_users(mix))


def test_a_day_whose_events_are_rewritten_is_counted_again(spark, storage):
    _both_sides(spark, storage)
    day = DAYS[1]
    uri = storage.spark_uri(events_day(day))
    kept = spark.read.schema(EVENTS_SCHEMA).parquet(uri).where("xxhash64(user_id) % 2 = 0")
    kept.localCheckpoint(eager=True).write.mode("overwrite").parquet(uri)
    counted, from_events, decisions = _both_sides(spark, storage)
    mix = _mix(counted.catalog(decisions))
    _same_users(counted.leaf_users(mix), from_events.leaf_users(mix))
    tables = [
        f.path
        for f in storage.list_files(day_dir(AUDIENCE_LEAF_COUNTS, day))
        if f.path.endswith(".parquet")
    ]
    assert len(tables) == 1, "the table of the old files is left behind"


def test_a_leaf_on_an_attribute_trimmed_on_one_of_its_days_is_answered_from_the_events(
    spark, storage
):
    events, decisions = window_inputs(spark, storage, DAYS)
    kept = decisions.where("kept").select("app_id", "event_type", "attribute").first()
    day = DAYS[2]
    path = storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, day))
    trimmed = spark.read.parquet(path).withColumn(
        "kept",
        F.when(
            (F.col("app_id") == kept.app_id)
            & (F.col("event_type") == kept.event_type)
            & (F.col("attribute") == kept.attribute),
            F.lit(False),
        ).otherwise(F.col("kept")),
    )
    trimmed.localCheckpoint(eager=True).write.mode("overwrite").parquet(path)
    value = (
        events.where(
            (F.col("app_id") == kept.app_id)
            & (F.col("event_type") == kept.event_type)
            & (F.to_date("event_time") == F.lit(day))
        )
        .select(F.col("event_attributes")[kept.attribute].alias("v"))
        .where("v is not null")
        .first()
        .v
    )
    leaf = Leaf("$", kept.app_id, kept.event_type, DAYS[0], day, None, {kept.attribute: value})
    counted, from_events, _ = _both_sides(spark, storage)
    answer = counted.leaf_users([leaf])[leaf_identity(leaf)]
    assert answer.tolist() == from_events.leaf_users([leaf])[leaf_identity(leaf)].tolist()
    assert len(answer) > 0


def test_a_leaf_of_two_attributes_has_the_users_the_events_give(spark, storage):
    events, _ = window_inputs(spark, storage, DAYS)
    row = (
        events.select("app_id", "event_type", F.map_entries("event_attributes").alias("e"))
        .where(F.size("e") >= 2)
        .first()
    )
    attributes = {entry["key"]: entry["value"] for entry in row.e[:2]}
    leaf = Leaf("$", row.app_id, row.event_type, DAYS[0], DAYS[-1], None, attributes)
    counted, from_events, _ = _both_sides(spark, storage)
    answer = counted.leaf_users([leaf])[leaf_identity(leaf)]
    assert answer.tolist() == from_events.leaf_users([leaf])[leaf_identity(leaf)].tolist()
    assert len(answer) > 0


def _shape_rows() -> pa.Table:
    return pa.table(
        {
            "app_id": ["b", "a", "a", "b", "a", "a"],
            "event_type": ["view"] * 6,
            "attribute": [None, "color", None, None, "color", None],
            "value": [None, "red", None, None, "red", None],
            "event_date": [date(2026, 9, 1)] * 6,
            "user_hash": [5, 9, -3, 1, 2, 7],
            "events": [1, 2, 3, 4, 5, 6],
        }
    )


def test_a_days_table_is_the_same_whatever_order_spark_returns_its_rows():
    keys = ["app_id", "event_type", "attribute", "value", "event_date"]
    rows = _shape_rows()
    table, runs = leaf_counts.grouped_runs(rows, keys)
    shuffled, shuffled_runs = leaf_counts.grouped_runs(rows.take([3, 0, 5, 1, 4, 2]), keys)
    assert shuffled.equals(table) and shuffled_runs == runs
    assert runs == [
        ["a", "view", None, None, "2026-09-01", 0, 2, 9],
        ["a", "view", "color", "red", "2026-09-01", 2, 4, 7],
        ["b", "view", None, None, "2026-09-01", 4, 6, 5],
    ]
    assert table.column("user_hash").to_pylist() == [-3, 7, 2, 9, 1, 5]
