"""Importing a source into the landing area: stage, check with the ingest rules, then publish.

1. **Stage**: the mapped lines are written by Spark, split by UTC day, under
   ``_imports/<id>/date=D/`` in the lake (gzip JSON lines). Nothing in ``landing/`` changes.
2. **Check**: the staged lines are read back and checked exactly as ``raw_events`` will check
   them, so the report says, before anything lands, how many lines each day has and which would
   be quarantined, and why.
3. **Publish** (unless a dry run): each staged day replaces that day's landing directory as a
   whole: its ``_SUCCESS`` marker removed first, its old files deleted, the staged files moved
   in, the marker written last, so the landing sensor never sees half a day. Days the import
   does not write are not touched. Lines whose time did not parse have no day: they are
   reported and not written.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from profile_store.events.json_lines import LINE as INGEST_LINE
from profile_store.events.schema import SOURCE_FILE
from profile_store.events.validation import (
    ValidationRules,
    check_lines,
    rejection_detail,
)
from profile_store.imports.landing_lines import DAY, LINE, landing_lines
from profile_store.imports.mapping import ImportMapping
from profile_store.lake.layout import SUCCESS_MARKER, landing_day
from profile_store.lake.storage import LakeStorage

IMPORTS = "_imports"
UNPLACED_DIR = "__HIVE_DEFAULT_PARTITION__"  # Spark's directory for a null partition value


@dataclass
class DayCheck:
    """One staged day: its lines and those the ingest rules would quarantine, by reason."""

    day: date
    lines: int
    quarantined: dict[str, int] = field(default_factory=dict)

    @property
    def quarantined_lines(self) -> int:
        return sum(self.quarantined.values())

    @property
    def quarantine_share(self) -> float:
        return self.quarantined_lines / self.lines if self.lines else 0.0


@dataclass
class ImportCheck:
    """What the staged import holds, checked with the ingest rules before it lands."""

    days: list[DayCheck]
    unplaced: int = 0
    unplaced_example: str | None = None
    examples: dict[str, str] = field(default_factory=dict)  # reason -> one line's detail
    repeated_event_ids: int = 0

    @property
    def lines(self) -> int:
        return sum(d.lines for d in self.days)

    @property
    def quarantined(self) -> dict[str, int]:
        total: dict[str, int] = defaultdict(int)
        for day in self.days:
            for reason, count in day.quarantined.items():
                total[reason] += count
        return dict(sorted(total.items(), key=lambda item: -item[1]))


@dataclass(frozen=True)
class PublishedDay:
    day: date
    files: int
    replaced_files: int


def new_import_id() -> str:
    return uuid.uuid4().hex[:12]


def staging_dir(import_id: str) -> str:
    return f"{IMPORTS}/{import_id}"


def stage(source: DataFrame, mapping: ImportMapping, storage: LakeStorage, import_id: str) -> str:
    """Write the mapped lines under the staging directory, split by day; returns its path.

    Range-partitioned by (day, event_id) into as many parts as the source has splits: a day is
    written by several tasks when it is large, and small days share a task, so files stay
    near the source's split size whatever the days' sizes.
    """
    lines = landing_lines(source, mapping)
    parts = max(1, source.rdd.getNumPartitions())
    staged = staging_dir(import_id)
    (
        lines.repartitionByRange(parts, DAY, F.xxhash64(LINE))
        .write.partitionBy(DAY)
        .option("compression", "gzip")
        .mode("overwrite")
        .text(storage.spark_uri(staged))
    )
    return staged


def _staged_lines(spark: SparkSession, storage: LakeStorage, staged: str) -> DataFrame:
    if not storage.list_files(staged):
        return spark.createDataFrame([], f"{INGEST_LINE} string, {DAY} date")
    return spark.read.text(storage.spark_uri(staged)).withColumnRenamed("value", INGEST_LINE)


def check_staged(
    spark: SparkSession,
    storage: LakeStorage,
    staged: str,
    rules: ValidationRules,
    ids_may_repeat: bool = True,
) -> ImportCheck:
    """Count each day's lines and what the ingest rules would quarantine (one pass), and, when
    ``ids_may_repeat`` (the ids come from the source), the event_ids repeated within a day (a
    second pass; derived ids are unique by construction)."""
    lines = _staged_lines(spark, storage, staged).withColumn(SOURCE_FILE, F.input_file_name())
    checked = check_lines(lines, None, rules)
    rejected = F.col("reason").isNotNull()
    raw_time = F.get_json_object(INGEST_LINE, "$.event_time")
    rows = (
        checked.groupBy(DAY, "reason")
        .agg(
            F.count(F.lit(1)).alias("count"),
            F.first(F.when(rejected, rejection_detail(rules, None))).alias("detail"),
            F.first(F.when(F.col(DAY).isNull(), raw_time)).alias("raw_time"),
        )
        .collect()
    )
    days: dict[date, DayCheck] = {}
    report = ImportCheck(days=[])
    for row in rows:
        if row[DAY] is None:
            report.unplaced += row["count"]
            report.unplaced_example = report.unplaced_example or row["raw_time"]
            continue
        day = days.setdefault(row[DAY], DayCheck(day=row[DAY], lines=0))
        day.lines += row["count"]
        if row["reason"] is not None:
            day.quarantined[row["reason"]] = row["count"]
            report.examples.setdefault(row["reason"], row["detail"])
    report.days = [days[d] for d in sorted(days)]
    if not ids_may_repeat:
        return report
    report.repeated_event_ids = (
        checked.where(F.col(DAY).isNotNull() & F.col("reason").isNull())
        .groupBy(DAY, "event_id")
        .count()
        .where(F.col("count") > 1)
        .count()
    )
    return report


def publish(
    storage: LakeStorage,
    staged: str,
    on_day: Callable[[int, int, PublishedDay], None] = lambda number, of, day: None,
) -> list[PublishedDay]:
    """Replace each staged day's landing directory with its staged files, marker last."""
    by_day: dict[date, list[str]] = defaultdict(list)
    for file in storage.list_files(staged):
        directory, name = file.path.rsplit("/", 1)
        value = directory.rsplit("/", 1)[-1].removeprefix(f"{DAY}=")
        if value == UNPLACED_DIR or not name.endswith(".gz") or name.startswith(("_", ".")):
            continue
        by_day[date.fromisoformat(value)].append(file.path)
    published = []
    for number, day in enumerate(sorted(by_day), start=1):
        target = landing_day(day)
        storage.delete_tree(f"{target}/{SUCCESS_MARKER}")
        old = storage.list_files(target)
        for file in old:
            storage.delete_tree(file.path)
        for index, path in enumerate(sorted(by_day[day])):
            storage.move(path, f"{target}/import-{index:05d}.jsonl.gz")
        storage.write_bytes(f"{target}/{SUCCESS_MARKER}", b"")
        done = PublishedDay(day=day, files=len(by_day[day]), replaced_files=len(old))
        published.append(done)
        on_day(number, len(by_day), done)
    return published


def discard_staging(storage: LakeStorage, staged: str) -> None:
    """What is left of an import's staging (all of it after a dry run or a failure), and the
    staging area itself once no other import uses it."""
    storage.delete_tree(staged)
    if not storage.list_files(IMPORTS):
        storage.delete_tree(IMPORTS)
