"""One day of landing files in, one clean partition and one quarantine partition out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from pyspark import StorageLevel
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from profile_store.events.schema import CORRUPT_RECORD, LANDING_SCHEMA
from profile_store.events.validation import (
    REASONS,
    ValidationRules,
    classify,
    clean_events,
    quarantined_rows,
)
from profile_store.lake_layout import SUCCESS_MARKER, events_day, landing_day, quarantine_day
from profile_store.lake_storage import LakeFile, LakeStorage
from profile_store.landing_watch import is_landing_data, landing_digest


class NoLandingData(RuntimeError):
    """The day has no landing files: nothing to ingest (and nothing is overwritten)."""


@dataclass
class IngestSummary:
    day: date
    landing_files: int
    landing_digest: str
    received_rows: int
    clean_rows: int
    duplicates_dropped: int
    quarantined_by_reason: dict[str, int] = field(default_factory=dict)
    apps: list[str] = field(default_factory=list)
    min_event_time: datetime | None = None
    max_event_time: datetime | None = None
    events_uri: str = ""
    quarantine_uri: str = ""

    @property
    def quarantined_rows(self) -> int:
        return sum(self.quarantined_by_reason.values())

    @property
    def quarantine_share(self) -> float:
        return self.quarantined_rows / self.received_rows if self.received_rows else 0.0


def landing_files(storage: LakeStorage, day: date) -> list[LakeFile]:
    """The day's landing batches; markers and hidden files are not data."""
    return [f for f in storage.list_files(landing_day(day)) if is_landing_data(f.path)]


def landing_complete(storage: LakeStorage, day: date) -> bool:
    return storage.exists(f"{landing_day(day)}/{SUCCESS_MARKER}")


def ingest_day(
    spark: SparkSession,
    storage: LakeStorage,
    day: date,
    rules: ValidationRules | None = None,
) -> IngestSummary:
    """Validate ``day``'s landing files and replace that day's clean and quarantine partitions.

    The partitions are overwritten as a whole, so re-running a day leaves exactly one copy of
    its events and no rows from an earlier run. Landing files are never modified.
    """
    rules = rules or ValidationRules()
    files = landing_files(storage, day)
    if not files:
        raise NoLandingData(
            f"no landing files for {day.isoformat()} under {storage.spark_uri(landing_day(day))}"
        )
    landing = (
        spark.read.schema(LANDING_SCHEMA)
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT_RECORD)
        .json([storage.spark_uri(f.path) for f in files])
    )
    classified = classify(landing, day, rules).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        counts = {
            (row["reason"] or ""): row["count"]
            for row in classified.groupBy("reason").count().collect()
        }
        received = sum(counts.values())
        passed = counts.pop("", 0)

        events_uri = storage.spark_uri(events_day(day))
        quarantine_uri = storage.spark_uri(quarantine_day(day))
        clean = clean_events(classified)
        files_out = max(1, passed // 2_000_000)
        (
            clean.repartition(files_out)
            .sortWithinPartitions("app_id", "event_type", "user_id")
            .write.mode("overwrite")
            .parquet(events_uri)
        )
        quarantined_rows(classified).coalesce(1).write.mode("overwrite").parquet(quarantine_uri)
    finally:
        classified.unpersist()

    written = spark.read.parquet(events_uri)
    stats = written.agg(
        F.count(F.lit(1)).alias("rows"),
        F.min("event_time").alias("min_time"),
        F.max("event_time").alias("max_time"),
        F.sort_array(F.collect_set("app_id")).alias("apps"),
    ).first()
    return IngestSummary(
        day=day,
        landing_files=len(files),
        landing_digest=landing_digest(files),
        received_rows=received,
        clean_rows=stats["rows"],
        duplicates_dropped=passed - stats["rows"],
        quarantined_by_reason={r: counts[r] for r in REASONS if counts.get(r)},
        apps=list(stats["apps"] or []),
        min_event_time=stats["min_time"],
        max_event_time=stats["max_time"],
        events_uri=events_uri,
        quarantine_uri=quarantine_uri,
    )
