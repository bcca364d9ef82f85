"""The erasure step's lake part: every partition holding the persons rewritten without them.

One rewrite for a whole batch of requests: ``person`` is the union of the batch's persons
(``resolution.union``), and ``owners`` names each request's ids, so that the rows removed are
also counted per request (a row naming the ids of two requests counts for both). Only
partitions that hold one of the persons' rows are read back and rewritten; each is overwritten
in place from a local checkpoint of its kept rows (so the same code serves a local directory and
S3). Matching is by set lookups (``isin``, one per JSON string of a line), so a thousand persons
cost one pass over each area, as one does. Areas, and the rows that go:

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

The days that held their events, quarantined lines and components are found first
(``plan_erasure``), before anything is removed, and kept by the caller: a re-run after a crash
in the middle of the rewrite still rewrites those days' landing files and rebuilds their
sketches, though the lake no longer shows the persons there.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import PurePosixPath
from urllib.parse import unquote

from pyspark.sql import Column, DataFrame, DataFrameReader, SparkSession
from pyspark.sql import functions as F

from profile_store.erasure.resolution import Person
from profile_store.events.raw_lines import (
    json_strings,
    names_any,
    quarantine_strings,
    written_forms,
)
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


ID = "_id"
OWNER = "_owner"
ROW = "_row"


@dataclass
class LakeErasure:
    """What the step removed, by area; partitions named ``area/date=D`` (no personal data)."""

    rows_removed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    rows_by_request: dict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )  # request id -> area -> rows naming its person's ids
    partitions: list[str] = field(default_factory=list)
    files_rewritten: int = 0
    component_days: list[date] = field(default_factory=list)

    def as_json(self) -> dict:
        return {
            "rows_removed": dict(sorted(self.rows_removed.items())),
            "rows_by_request": {
                request: dict(sorted(areas.items()))
                for request, areas in sorted(self.rows_by_request.items())
            },
            "partitions_rewritten": sorted(set(self.partitions)),
            "files_rewritten": self.files_rewritten,
            "component_days_recomputed": [d.isoformat() for d in self.component_days],
        }


@dataclass(frozen=True)
class LakePlan:
    """The days holding the persons, found before anything is removed."""

    event_days: list[date]
    quarantine_days: list[date]
    component_days: list[date]
    event_days_by_request: dict[str, list[date]]

    def as_json(self) -> dict:
        body = asdict(self)
        body["event_days_by_request"] = {
            request: [d.isoformat() for d in days]
            for request, days in sorted(self.event_days_by_request.items())
        }
        for name in ("event_days", "quarantine_days", "component_days"):
            body[name] = [d.isoformat() for d in body[name]]
        return body

    @classmethod
    def from_json(cls, body: dict) -> LakePlan:
        def days(values: list[str]) -> list[date]:
            return [date.fromisoformat(v) for v in values]

        return cls(
            days(body["event_days"]),
            days(body["quarantine_days"]),
            days(body["component_days"]),
            {request: days(v) for request, v in body["event_days_by_request"].items()},
        )


def owners_frame(spark: SparkSession, owners: Mapping[str, Iterable[str]]) -> DataFrame:
    """``(_id, _owner)``: every id of each request's person (request id -> ids), as a column
    holds it and as a JSON line writes it, to count removed rows per request."""
    pairs = {
        (form, request)
        for request, ids in owners.items()
        for value in ids
        for form in (value, *written_forms([value]))
    }
    return spark.createDataFrame(sorted(pairs), f"{ID} string, {OWNER} string")


def _named(column: str, values: Iterable[str]) -> Column:
    return F.coalesce(F.col(column).isin(sorted(values)), F.lit(False))


def _mentions(strings: Column, ids: Iterable[str]) -> Column:
    """The text's JSON ``strings`` name one of ``ids``."""
    written = written_forms(ids)
    return F.coalesce(F.exists(strings, lambda value: value.isin(written)), F.lit(False))


def _row_predicates(person: Person) -> dict[str, tuple[Column, Column]]:
    """Per area: which rows go, and the ids each row names (to count it per request)."""
    mine = person.profiles
    ids = person.suppressed_ids
    is_login = F.col("key_type") == MEMBER_ID
    login = F.when(is_login, F.col("key"))
    profile = (_named("profile", mine), F.array("profile"))
    return {
        EVENTS: (_named("user_id", mine), F.array("user_id")),
        QUARANTINE: (
            _named("user_id", mine) | names_any(ids),
            F.concat(F.array("user_id"), quarantine_strings()),
        ),
        IDENTITY_KEYS: (
            _named("profile", mine) | (is_login & _named("key", person.logins)),
            F.array(F.col("profile"), login),
        ),
        IDENTITY_PROFILES: profile,
        IDENTITY_EDGES: (
            _named("profile_a", mine) | _named("profile_b", mine),
            F.array("profile_a", "profile_b"),
        ),
        PROFILE_SEGMENTS: profile,
        PROFILE_COUNTERS: profile,
        PROFILE_UNSYNCED: profile,
        AUDIENCE_ACTIVATIONS: profile,
        COMPACTED_PROFILES: profile,
    }


def _by_request(matched: DataFrame, key: str, named: Column, owners: DataFrame) -> dict:
    """``{(key value, request id): rows}``: the rows of ``matched`` (few: the persons',
    numbered by ``_numbered``) by ``key`` and by each request whose person's ids the row
    names."""
    tagged = matched.select(
        F.col(key).cast("string").alias("_key"), ROW, F.explode(F.array_distinct(named)).alias(ID)
    )
    counted = (
        tagged.join(F.broadcast(owners), ID)
        .select("_key", ROW, OWNER)
        .distinct()
        .groupBy("_key", OWNER)
        .count()
    )
    return {(r["_key"], r[OWNER]): r["count"] for r in counted.collect()}


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


def _matched(
    spark: SparkSession, storage: LakeStorage, area: str, predicate: Column
) -> DataFrame | None:
    """The area's rows that go (they are few: the persons'), numbered."""
    frame = _area(spark, storage, area)
    return None if frame is None else _numbered(frame.where(predicate))


def _numbered(rows: DataFrame) -> DataFrame:
    """``rows`` with a ``_row`` number, checkpointed: fixed, so that a row naming several ids
    of one request counts once."""
    return rows.withColumn(ROW, F.monotonically_increasing_id()).localCheckpoint(eager=True)


def _days_of(matched: DataFrame | None) -> list[date]:
    if matched is None:
        return []
    return sorted(r.date for r in matched.select("date").distinct().collect())


def _write(kept: DataFrame, storage: LakeStorage, relative: str) -> None:
    """Replace the partition with ``kept``, already checkpointed (so it no longer reads it)."""
    kept.coalesce(max(1, kept.rdd.getNumPartitions() // 4)).write.mode("overwrite").parquet(
        storage.spark_uri(relative)
    )


def _overwrite(frame: DataFrame, storage: LakeStorage, relative: str) -> None:
    """Replace the partition with ``frame``, which may read the partition itself."""
    _write(frame.localCheckpoint(eager=True), storage, relative)


def _remove_rows(
    spark: SparkSession,
    storage: LakeStorage,
    area: str,
    rows: tuple[Column, Column],
    owners: DataFrame,
    result: LakeErasure,
) -> list[date]:
    predicate, named = rows
    matched = _matched(spark, storage, area, predicate)
    days = _days_of(matched)
    if matched is None or not days:
        return days
    for (_, request), count in _by_request(matched, "date", named, owners).items():
        result.rows_by_request[request][area] += count
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
    spark: SparkSession,
    storage: LakeStorage,
    directory: str,
    ids: AbstractSet[str],
    owners: DataFrame,
    result: LakeErasure,
) -> bool:
    """Rewrite every file of ``directory`` with a line naming one of ``ids``; True if any."""
    files = [f.path for f in storage.list_files(directory) if is_landing_data(f.path)]
    if not files or not ids:
        return False
    lines = spark.read.text([storage.spark_uri(p) for p in files]).withColumn(
        "file", F.input_file_name()
    )
    strings = json_strings(F.col("value"))
    named = _mentions(strings, ids)
    matched = _numbered(lines.where(named))
    # input_file_name() is a URI: percent-encoded where a path has spaces or the like.
    hits = {unquote(r.file): r["count"] for r in matched.groupBy("file").count().collect()}
    if not hits:
        return False
    area = PurePosixPath(directory).parts[0]
    for (_, request), count in _by_request(matched, "file", strings, owners).items():
        result.rows_by_request[request][area] += count
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
        result.rows_removed[area] += removed
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
    mastered = _matched(spark, storage, COMPACTED_PROFILES, _named("master", person.profiles))
    for day in _days_of(mastered):
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


def _component_predicate(person: Person) -> Column:
    return _named("profile", person.profiles) | _named("master", person.profiles)


def plan_erasure(
    spark: SparkSession, storage: LakeStorage, person: Person, owners: DataFrame
) -> LakePlan:
    """The days that hold ``person``'s events (also per request), quarantined lines and
    components, read before anything is removed."""
    predicates = _row_predicates(person)
    events = _matched(spark, storage, EVENTS, predicates[EVENTS][0])
    by_request: dict[str, list[date]] = defaultdict(list)
    if events is not None:
        for day, request in _by_request(events, "date", predicates[EVENTS][1], owners):
            by_request[request].append(date.fromisoformat(day))
    return LakePlan(
        event_days=_days_of(events),
        quarantine_days=_days_of(_matched(spark, storage, QUARANTINE, predicates[QUARANTINE][0])),
        component_days=_days_of(
            _matched(spark, storage, IDENTITY_COMPONENTS, _component_predicate(person))
        ),
        event_days_by_request={request: sorted(days) for request, days in by_request.items()},
    )


def erase_from_lake(
    spark: SparkSession,
    storage: LakeStorage,
    person: Person,
    plan: LakePlan,
    owners: DataFrame,
    threshold: float = 0.9,
) -> LakeErasure:
    """Remove ``person`` from every area of the lake (see the module docstring); ``plan``:
    ``plan_erasure``'s, made before anything was removed (by this run or a crashed one)."""
    result = LakeErasure()
    # Days whose components hold them now, and those that did when the batch was planned.
    component_days = sorted(
        set(plan.component_days)
        | set(_days_of(_matched(spark, storage, IDENTITY_COMPONENTS, _component_predicate(person))))
    )
    for area, rows in _row_predicates(person).items():
        _remove_rows(spark, storage, area, rows, owners, result)
    ingested = {d.isoformat() for d in [*plan.event_days, *plan.quarantine_days]}
    ingested |= {p.split("=")[1] for p in result.partitions if p.startswith(QUARANTINE)}
    ids = person.suppressed_ids
    for folder in _landing_days(storage):
        day_text = folder.removeprefix("date=")
        if day_text in ingested or not storage.exists(day_dir(EVENTS, day_text)):
            directory = day_dir(LANDING, day_text)
            if _rewrite_text_files(spark, storage, directory, ids, owners, result):
                _mark_rewritten(storage, day_text)
    if storage.exists(SEGMENT_FEED):
        for folder in sorted(
            {PurePosixPath(f.path).parts[1] for f in storage.list_files(SEGMENT_FEED)}
        ):
            directory = f"{SEGMENT_FEED}/{folder}"
            _rewrite_text_files(spark, storage, directory, person.profiles, owners, result)

    assignments = {
        day: _recompute_components(spark, storage, day, threshold) for day in component_days
    }
    for day in component_days:
        result.partitions.append(day_dir(IDENTITY_COMPONENTS, day))
    _replace_masters(spark, storage, person, assignments, result)
    storage.delete_tree(STAGING)
    result.component_days = component_days
    return result
