"""Each day's users per leaf shape, kept in the lake: the accuracy check's exact side reads a
day's events once, not again on every day of the 30-day window that holds it.

A leaf shape is an (app, event type) alone, or narrowed by one value of an attribute kept that
day. A day's table holds, per shape and event date, the hash of every user (``xxhash64`` of
``user_id``, as ``exact.exact_leaf_users``) with their number of events. A leaf over any range
of days, with or without a minimum count, is then the union of its days' runs, counts summed:
the same set the events give.

```
audience_leaf_counts/date=D/counts-<inputs>.parquet  user_hash, events: every run, index order
audience_leaf_counts/date=D/index.json               the inputs' files, kept attributes, runs
```

A day is counted again when the files of its events or of its trim decisions are not those its
index names (a re-ingested day, an erasure's rewrite, new decisions).
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from profile_store.audiences.attribute_stats import TRIM_DECISIONS_SCHEMA
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.lake.layout import AUDIENCE_LEAF_COUNTS, TRIMMED_ATTRIBUTES, day_dir, events_day
from profile_store.lake.storage import LakeStorage

FORMAT = 1  # bumped when a table's layout changes: older days are counted again
INDEX = "index.json"

Shape = tuple[str, str, str | None, str | None]  # app, event type, attribute, value


@dataclass(frozen=True)
class Run:
    """The rows of one shape on one event date: ``[start, stop)`` of the day's arrays."""

    shape: Shape
    event_date: date
    start: int
    stop: int
    events: int


@dataclass(frozen=True)
class DayLeafCounts:
    """One day's index; its arrays are read on demand (``arrays``)."""

    day: date
    kept: frozenset[tuple[str, str, str]]  # (app, event type, attribute) counted by value
    runs: tuple[Run, ...]
    counts_file: str
    counted_now: bool = field(default=False, compare=False)  # by this call, from the events

    @cached_property
    def by_shape(self) -> dict[Shape, tuple[Run, ...]]:
        """The runs of each shape (one per event date)."""
        found: dict[Shape, list[Run]] = {}
        for run in self.runs:
            found.setdefault(run.shape, []).append(run)
        return {shape: tuple(runs) for shape, runs in found.items()}

    def arrays(self, storage: LakeStorage) -> tuple[np.ndarray, np.ndarray]:
        """``(user_hash int64, events int64)`` of every run, in the index's order."""
        table = pq.read_table(io.BytesIO(storage.read_bytes(self.counts_file)))
        return (
            table.column("user_hash").to_numpy().astype(np.int64, copy=False),
            table.column("events").to_numpy().astype(np.int64),
        )


def day_leaf_counts(spark: SparkSession, storage: LakeStorage, day: date) -> DayLeafCounts:
    """The day's counts, counted from its events when none match its inputs' files."""
    inputs = _inputs(storage, day)
    index_path = f"{day_dir(AUDIENCE_LEAF_COUNTS, day)}/{INDEX}"
    if storage.exists(index_path):
        index = json.loads(storage.read_bytes(index_path))
        if index.get("format") == FORMAT and index.get("inputs") == inputs:
            return _from_index(day, index)
    return count_day(spark, storage, day, inputs)


def count_day(
    spark: SparkSession, storage: LakeStorage, day: date, inputs: list | None = None
) -> DayLeafCounts:
    """Count the day's events by leaf shape (one Spark job) and write its table and index."""
    inputs = _inputs(storage, day) if inputs is None else inputs
    decisions = (
        spark.read.schema(TRIM_DECISIONS_SCHEMA)
        .parquet(storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, day)))
        .where("kept")
        .select("app_id", "event_type", "attribute")
        .collect()
    )
    kept = frozenset((r.app_id, r.event_type, r.attribute) for r in decisions)
    events = spark.read.schema(EVENTS_SCHEMA).parquet(storage.spark_uri(events_day(day)))
    table = shape_counts(spark, events, kept).toArrow()
    table, runs = grouped_runs(table, ["app_id", "event_type", "attribute", "value", "event_date"])
    directory = day_dir(AUDIENCE_LEAF_COUNTS, day)
    digest = hashlib.sha256(json.dumps([FORMAT, inputs]).encode()).hexdigest()[:16]
    counts_file = f"{directory}/counts-{digest}.parquet"
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    storage.write_bytes(counts_file, sink.getvalue())
    index = {
        "format": FORMAT,
        "inputs": inputs,
        "counts_file": counts_file,
        "kept": sorted(list(k) for k in kept),
        "runs": runs,
    }
    storage.write_bytes(f"{directory}/{INDEX}", json.dumps(index).encode())
    for stale in storage.list_files(directory):
        if stale.path.endswith(".parquet") and stale.path != counts_file:
            storage.delete_tree(stale.path)
    return _from_index(day, index, counted_now=True)


def shape_counts(
    spark: SparkSession, events: DataFrame, kept: Iterable[tuple[str, str, str]]
) -> DataFrame:
    """Per shape, event date and user hash: the user's events. One scan, one aggregation: each
    event counts once for its pair and once per value of a ``kept`` attribute it has."""
    by_pair: dict[tuple[str, str], list[str]] = {}
    for app, event, attribute in sorted(kept):
        by_pair.setdefault((app, event), []).append(attribute)
    kept_table = spark.createDataFrame(
        [(app, event, names) for (app, event), names in sorted(by_pair.items())],
        "app_id string, event_type string, kept array<string>",
    )
    kept_names = F.coalesce(F.col("kept"), F.array().cast("array<string>"))
    offered = F.map_filter(
        "event_attributes", lambda k, v: F.array_contains(kept_names, k) & v.isNotNull()
    )
    whole_pair = F.array(
        F.struct(F.lit(None).cast("string").alias("key"), F.lit(None).cast("string").alias("value"))
    )
    rows = events.join(F.broadcast(kept_table), ["app_id", "event_type"], "left").select(
        "app_id",
        "event_type",
        F.to_date("event_time").alias("event_date"),
        F.xxhash64("user_id").alias("user_hash"),
        F.explode(F.concat(whole_pair, F.map_entries(offered))).alias("shape"),
    )
    return rows.groupBy(
        "app_id",
        "event_type",
        F.col("shape.key").alias("attribute"),
        F.col("shape.value").alias("value"),
        "event_date",
        "user_hash",
    ).agg(F.count(F.lit(1)).cast("int").alias("events"))


def grouped_runs(table: pa.Table, keys: list[str]) -> tuple[pa.Table, list[list]]:
    """``table``'s ``user_hash`` and ``events``, each run of equal ``keys`` together and sorted
    by user hash within it; each run's keys, rows and events.

    The keys are sorted by their ranks among their distinct values (a null first), not as
    strings, row by row: the same rows make the same table, whatever order Spark returned.
    """
    if table.num_rows == 0:
        return table.select(["user_hash", "events"]), []
    encoded = [pc.dictionary_encode(table.column(key).combine_chunks()) for key in keys]
    codes = [_ranks(column) for column in encoded]
    hashes = table.column("user_hash").to_numpy()
    order = np.lexsort([hashes, *reversed(codes)])  # the last key sorts first
    changes = np.zeros(table.num_rows, dtype=bool)
    changes[0] = True
    for key_codes in codes:
        ordered = key_codes[order]
        changes[1:] |= ordered[1:] != ordered[:-1]
    starts = np.flatnonzero(changes)
    stops = np.r_[starts[1:], table.num_rows]
    events = table.column("events").to_numpy()[order]
    totals = np.add.reduceat(events.astype(np.int64), starts)
    firsts = [column.take(pa.array(order[starts])).to_pylist() for column in encoded]
    runs = [
        [app, event, attribute, value, day.isoformat(), int(start), int(stop), int(total)]
        for app, event, attribute, value, day, start, stop, total in zip(
            *firsts, starts, stops, totals, strict=True
        )
    ]
    counts = pa.table({"user_hash": hashes[order], "events": events})
    return counts, runs


def _ranks(column: pa.DictionaryArray) -> np.ndarray:
    """Each value's rank among the column's distinct values; a null is -1."""
    indices = pc.fill_null(column.indices, -1).to_numpy()
    if len(column.dictionary) == 0:
        return indices.astype(np.int64)
    rank_of = np.empty(len(column.dictionary), dtype=np.int64)
    rank_of[pc.array_sort_indices(column.dictionary).to_numpy()] = np.arange(len(rank_of))
    return np.where(indices < 0, -1, rank_of[np.maximum(indices, 0)])


def _inputs(storage: LakeStorage, day: date) -> list:
    """The data files the day's table is counted from: a rewrite changes names or sizes."""
    files = storage.list_files(events_day(day)) + storage.list_files(
        day_dir(TRIMMED_ATTRIBUTES, day)
    )
    return [[f.path, f.size, f.modified_ms] for f in files if f.path.endswith(".parquet")]


def _from_index(day: date, index: dict, counted_now: bool = False) -> DayLeafCounts:
    return DayLeafCounts(
        day=day,
        kept=frozenset((app, event, attribute) for app, event, attribute in index["kept"]),
        runs=tuple(
            Run((app, event, attribute, value), date.fromisoformat(d), start, stop, events)
            for app, event, attribute, value, d, start, stop, events in index["runs"]
        ),
        counts_file=index["counts_file"],
        counted_now=counted_now,
    )
