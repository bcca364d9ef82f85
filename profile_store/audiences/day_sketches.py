"""Building one day of the ``sketches`` table from the clean events and that day's trimming.

Shared by the ``audience_sketches`` asset and the erasure step (which rebuilds the days a
forgotten person appeared on). A re-build leaves exactly the day's new rows: rows of
combinations that no longer occur are removed, and the built-day marker is written last, so
that from then on a pair without rows on the day is answered as zero users, not refused.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import date

from pyspark.sql import SparkSession

from profile_store.audiences.attribute_stats import TRIM_DECISIONS_SCHEMA
from profile_store.audiences.built_days import built_day_cells
from profile_store.audiences.rowkey import day_component
from profile_store.audiences.sketch_rows import day_sketch_rows
from profile_store.audiences.sketch_table import SKETCH_TABLE, ensure_table
from profile_store.audiences.sketch_writer import remove_stale_rows, write_sketch_rows
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.hbase.settings import ThriftAddress
from profile_store.lake.layout import AUDIENCE_SKETCHES, TRIMMED_ATTRIBUTES, day_dir, events_day
from profile_store.lake.storage import LakeStorage


def pairs_manifest(day: date) -> str:
    """The lake file listing the (app, event type) pairs a day's build wrote."""
    return f"{day_dir(AUDIENCE_SKETCHES, day)}/pairs.json"


def build_day_sketches(
    spark: SparkSession,
    storage: LakeStorage,
    connect: Callable[[], AbstractContextManager],
    address: ThriftAddress,
    day: date,
    lg_k: int,
    max_pair_rows: int,
    batch_size: int,
) -> dict[str, int]:
    """Write the day's sketch rows; returns their counts by kind (the asset's metadata).

    ``connect()``: a happybase connection for the driver's reads and deletes; ``address``:
    where executors write.
    """
    events = spark.read.schema(EVENTS_SCHEMA).parquet(storage.spark_uri(events_day(day)))
    decisions = spark.read.schema(TRIM_DECISIONS_SCHEMA).parquet(
        storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, day))
    )
    rows = day_sketch_rows(events, decisions, day_component(day), lg_k, max_pair_rows).persist()
    try:
        with connect() as connection:
            ensure_table(connection, SKETCH_TABLE)
        written = write_sketch_rows(rows, address, SKETCH_TABLE, batch_size)
        keys = rows.select("rowkey", "row_kind", "app_id", "event_type", "events").collect()
    finally:
        rows.unpersist()

    manifest_path = pairs_manifest(day)
    pairs = {(r.app_id, r.event_type) for r in keys}
    if storage.exists(manifest_path):
        pairs |= {tuple(p) for p in json.loads(storage.read_bytes(manifest_path))}
    with connect() as connection:
        removed = remove_stale_rows(
            connection.table(SKETCH_TABLE), day, pairs, {r.rowkey.encode() for r in keys}
        )
    current_pairs = sorted({(r.app_id, r.event_type) for r in keys})
    storage.write_bytes(manifest_path, json.dumps(current_pairs).encode())
    with connect() as connection:
        connection.table(SKETCH_TABLE).put(*built_day_cells(day, current_pairs))

    kinds = Counter(r.row_kind for r in keys)
    return {
        "dagster/row_count": written,
        "combination_rows": kinds["combination"],
        "aggregate_rows": kinds["aggregate"],
        "marginal_rows": kinds["marginal"],
        "kept_marker_rows": kinds["kept_marker"],
        "pair_rows": kinds["pair"],
        "pair_marker_rows": kinds["pair_marker"],
        "stale_rows_removed": removed,
        "events": sum(r.events for r in keys if r.row_kind == "aggregate"),
    }
