"""The erasure step's lake part: every partition holding the person rewritten without them.

Only partitions that hold one of the person's rows are read back and rewritten; each is
overwritten in place from a local checkpoint of its kept rows (so the same code serves a local
directory and S3). Areas, and the rows that go:

- ``events``, the identity areas ``identity_keys`` / ``identity_profiles`` / ``identity_edges``
  and the profile state (``profile_segments``, ``profile_counters``, ``profile_unsynced``,
  ``audience_activations``, ``compacted_profiles``): rows of the person's profiles (an edge
  with one end in the person, a login key of theirs);
- ``quarantine``: rows of their ids, and rows whose raw line names one of their ids (for a
  line cut to its prefix, its ``raw_strings`` too: ``raw_lines``);
- ``landing`` and ``segment_feed`` files: lines naming one of their ids (as a JSON string),
  each such file rewritten under its own name;
- ``identity_components``: every day that held them recomputed from the remaining edges (the
  components they bridged split, masters by the usual rule: the oldest profile), and the
  masters ``compacted_profiles`` recorded for them replaced by the new ones.
"""

from __future__ import annotations

import json
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import PurePosixPath
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F

from profile_store.erasure.resolution import Person
from profile_store.events.raw_lines import names_any
from profile_store.events.schema import QUARANTINE_SCHEMA
from profile_store.identity.incremental import full_day, summarize
from profile_store.identity.keys import profiles_first_seen
from profile_store.identity.pipeline import (
    ASSIGNMENT_SCHEMA,
    PROFILES_SCHEMA,
    SUMMARY_FILE,
    read_history,
    surviving_edges,
)
from profile_store.identity.rules import MEMBER_ID
from profile_store.lake.landing_watch import complete_days, is_landing_data
from profile_store.lake.layout import (
    AUDIENCE_ACTIVATIONS,
    COMPACTED_PROFILES,
    EVENTS,
    IDENTITY_COMPONENTS,
    IDENTITY_EDGES,
    IDENTITY_KEYS,
    IDENTITY_PROFILES,
    LANDING,
    PROFILE_COUNTERS,
    PROFILE_SEGMENTS,
    PROFILE_UNSYNCED,
    QUARANTINE,
    SEGMENT_FEED,
    SUCCESS_MARKER,
    day_dir,
)
from profile_store.lake.storage import LakeStorage

STAGING = "erasure/_staging"
LANDING_REWRITES = "erasure/landing"
"""``erasure/landing/date=D``: the digest of a landing day the erasure step rewrote, so that the
landing sensor does not take the rewritten files for new ones."""


@dataclass
class LakeErasure:
    """What the step removed, by area; partitions named ``area/date=D`` (no personal data)."""

    rows_removed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    partitions: list[str] = field(default_factory=list)
    files_rewritten: int = 0
    event_days: list[date] = field(default_factory=list)
    component_days: list[date] = field(default_factory=list)


def _named(column: str, values: Iterable[str]) -> Column:
    return F.coalesce(F.col(column).isin(sorted(values)), F.lit(False))


def _mentions(column: str, ids: Iterable[str]) -> Column:
    """The text names one of ``ids`` as a JSON string value."""
    found = F.lit(False)
    for value in sorted(ids):
        found = found | F.coalesce(F.col(column).contains(json.dumps(value)), F.lit(False))
    return found


def _row_predicates(person: Person) -> dict[str, Column]:
    mine = person.profiles
    ids = person.suppressed_ids
    return {
        EVENTS: _named("user_id", mine),
        QUARANTINE: _named("user_id", mine) | names_any(ids),
        IDENTITY_KEYS: _named("profile", mine)
        | ((F.col("key_type") == MEMBER_ID) & _named("key", person.logins)),
        IDENTITY_PROFILES: _named("profile", mine),
        IDENTITY_EDGES: _named("profile_a", mine) | _named("profile_b", mine),
        PROFILE_SEGMENTS: _named("profile", mine),
        PROFILE_COUNTERS: _named("profile", mine),
        PROFILE_UNSYNCED: _named("profile", mine),
        AUDIENCE_ACTIVATIONS: _named("profile", mine),
        COMPACTED_PROFILES: _named("profile", mine),
    }


def _reader(spark: SparkSession, area: str) -> DataFrameReader:
    """Quarantine partitions written before a column existed read it as null."""
    return spark.read.schema(QUARANTINE_SCHEMA) if area == QUARANTINE else spark.read


def _area(spark: SparkSession, storage: LakeStorage, area: str) -> DataFrame | None:
    if not storage.exists(area) or not any(
        f.path.endswith(".parquet") for f in storage.list_files(area)
    ):
        return None
    uri = storage.spark_uri(area)
    return _reader(spark, area).option("basePath", uri).parquet(uri)


def _days_matching(
    spark: SparkSession, storage: LakeStorage, area: str, predicate: Column
) -> list[date]:
    frame = _area(spark, storage, area)
    if frame is None:
        return []
    return sorted(r.date for r in frame.where(predicate).select("date").distinct().collect())


def _write(kept: DataFrame, storage: LakeStorage, relative: str) -> None:
    """Replace the partition with ``kept``, already checkpointed (so it no longer reads it)."""
    kept.coalesce(max(1, kept.rdd.getNumPartitions() // 4)).write.mode("overwrite").parquet(
        storage.spark_uri(relative)
    )


def _overwrite(frame: DataFrame, storage: LakeStorage, relative: str) -> None:
    """Replace the partition with ``frame``, which may read the partition itself."""
    _write(frame.localCheckpoint(eager=True), storage, relative)


def _remove_rows(
    spark: SparkSession, storage: LakeStorage, area: str, predicate: Column, result: LakeErasure
) -> list[date]:
    days = _days_matching(spark, storage, area, predicate)
    for day in days:
        relative = day_dir(area, day)
        partition = _reader(spark, area).parquet(storage.spark_uri(relative))
        before = partition.count()
        kept = partition.where(~predicate).localCheckpoint(eager=True)
        result.rows_removed[area] += before - kept.count()
        _write(kept, storage, relative)
        result.partitions.append(relative)
    return days


def _rewrite_text_files(
    spark: SparkSession, storage: LakeStorage, directory: str, ids: set[str], result: LakeErasure
) -> bool:
    """Rewrite every file of ``directory`` with a line naming one of ``ids``; True if any."""
    files = [f.path for f in storage.list_files(directory) if is_landing_data(f.path)]
    if not files or not ids:
        return False
    lines = spark.read.text([storage.spark_uri(p) for p in files]).withColumn(
        "file", F.input_file_name()
    )
    named = _mentions("value", ids)
    # input_file_name() is a URI: percent-encoded where a path has spaces or the like.
    hits = {
        unquote(r.file): r["count"] for r in lines.where(named).groupBy("file").count().collect()
    }
    if not hits:
        return False
    for path in files:
        uri = storage.spark_uri(path)
        removed = next((count for file, count in hits.items() if file.endswith(path)), 0)
        if not removed:
            continue
        staging = f"{STAGING}/{uuid.uuid4().hex}"
        writer = spark.read.text(uri).where(~named).coalesce(1).write.mode("overwrite")
        if path.endswith(".gz"):
            writer = writer.option("compression", "gzip")
        writer.text(storage.spark_uri(staging))
        (part,) = [f.path for f in storage.list_files(staging) if "/part-" in f.path]
        storage.move(part, path)
        storage.delete_tree(staging)
        result.rows_removed[PurePosixPath(directory).parts[0]] += removed
        result.files_rewritten += 1
    result.partitions.append(directory)
    return True


def rewritten_landing_digest(storage: LakeStorage, day: str) -> str | None:
    """The digest the erasure step left a landing day with, if it rewrote the day."""
    marker = day_dir(LANDING_REWRITES, day)
    return storage.read_bytes(marker).decode().strip() if storage.exists(marker) else None


def _mark_rewritten(storage: LakeStorage, day: str) -> None:
    """The day's files are complete again (its marker rewritten after them), and their new
    digest is recorded for the landing sensor."""
    marker = f"{day_dir(LANDING, day)}/{SUCCESS_MARKER}"
    if storage.exists(marker):
        storage.write_bytes(marker, storage.read_bytes(marker))
    landed = complete_days(storage).get(day)
    if landed is not None:
        storage.write_bytes(day_dir(LANDING_REWRITES, day), landed.digest.encode())


def _landing_days(storage: LakeStorage) -> list[str]:
    if not storage.exists(LANDING):
        return []
    return sorted({PurePosixPath(f.path).parts[1] for f in storage.list_files(LANDING)})


def _recompute_components(
    spark: SparkSession, storage: LakeStorage, day: date, threshold: float
) -> DataFrame:
    pairs = surviving_edges(spark, storage, day, threshold).select("profile_a", "profile_b")
    history = read_history(spark, storage, IDENTITY_PROFILES, PROFILES_SCHEMA, day)
    assignment = full_day(pairs.distinct(), profiles_first_seen(history)).assignment
    snapshot = day_dir(IDENTITY_COMPONENTS, day)
    assignment.write.mode("overwrite").parquet(storage.spark_uri(snapshot))
    written = spark.read.schema(ASSIGNMENT_SCHEMA).parquet(storage.spark_uri(snapshot))
    storage.write_bytes(f"{snapshot}/{SUMMARY_FILE}", summarize(written).to_json())
    return written


def _replace_masters(
    spark: SparkSession,
    storage: LakeStorage,
    person: Person,
    assignments: dict[date, DataFrame],
    result: LakeErasure,
) -> None:
    """``compacted_profiles`` rows whose master was one of the person's: the new master."""
    for day in _days_matching(
        spark, storage, COMPACTED_PROFILES, _named("master", person.profiles)
    ):
        relative = day_dir(COMPACTED_PROFILES, day)
        rows = spark.read.parquet(storage.spark_uri(relative))
        assignment = assignments.get(day)
        if assignment is None:
            assignment = spark.read.schema(ASSIGNMENT_SCHEMA).parquet(
                storage.spark_uri(day_dir(IDENTITY_COMPONENTS, day))
            )
        new = assignment.select("profile", F.col("master").alias("new_master"))
        fixed = rows.join(new, "profile", "left").select(
            "profile",
            F.when(_named("master", person.profiles), F.coalesce("new_master", "profile"))
            .otherwise(F.col("master"))
            .alias("master"),
        )
        _overwrite(fixed, storage, relative)
        if relative not in result.partitions:
            result.partitions.append(relative)


def erase_from_lake(
    spark: SparkSession, storage: LakeStorage, person: Person, threshold: float = 0.9
) -> LakeErasure:
    """Remove ``person`` from every area of the lake (see the module docstring)."""
    result = LakeErasure()
    predicates = _row_predicates(person)
    # Days whose components held them: found before their rows leave the identity areas.
    component_days = _days_matching(
        spark,
        storage,
        IDENTITY_COMPONENTS,
        _named("profile", person.profiles) | _named("master", person.profiles),
    )
    event_days = []
    for area, predicate in predicates.items():
        days = _remove_rows(spark, storage, area, predicate, result)
        if area == EVENTS:
            event_days = days
    quarantine_days = {p.split("=")[1] for p in result.partitions if p.startswith(QUARANTINE)}
    ingested = {d.isoformat() for d in event_days} | quarantine_days
    ids = person.suppressed_ids
    for folder in _landing_days(storage):
        day = folder.removeprefix("date=")
        if day in ingested or not storage.exists(day_dir(EVENTS, day)):
            directory = day_dir(LANDING, day)
            if _rewrite_text_files(spark, storage, directory, ids, result):
                _mark_rewritten(storage, day)
    if storage.exists(SEGMENT_FEED):
        for folder in sorted(
            {PurePosixPath(f.path).parts[1] for f in storage.list_files(SEGMENT_FEED)}
        ):
            _rewrite_text_files(spark, storage, f"{SEGMENT_FEED}/{folder}", person.profiles, result)

    assignments = {
        day: _recompute_components(spark, storage, day, threshold) for day in component_days
    }
    for day in component_days:
        result.partitions.append(day_dir(IDENTITY_COMPONENTS, day))
    _replace_masters(spark, storage, person, assignments, result)
    storage.delete_tree(STAGING)
    result.event_days = event_days
    result.component_days = component_days
    return result
