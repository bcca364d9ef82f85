"""One day of landing files in, one clean partition and one quarantine partition out."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from profile_store.events.json_lines import LINE
from profile_store.events.rules import REASONS
from profile_store.events.schema import QUARANTINED_FIELDS, SOURCE_FILE
from profile_store.events.unreadable_files import UnreadableFile, unreadable_files
from profile_store.events.validation import (
    COPY,
    ValidationRules,
    check_lines,
    clean_events,
    conflicting_rows,
    quarantined_rows,
    repeated_event_ids,
    resolve_duplicates,
)
from profile_store.lake.landing_watch import is_landing_data, landing_digest
from profile_store.lake.layout import SUCCESS_MARKER, events_day, landing_day, quarantine_day
from profile_store.lake.storage import LakeFile, LakeStorage
from profile_store.spark.observations import observed_metrics
from profile_store.suppression.salted_digests import Suppression

SUPPRESSED = "suppressed"
COUNTED_REASONS = (*REASONS, SUPPRESSED)  # every reason a row is counted under
ROWS_PER_FILE = 2_000_000


@dataclass
class IngestSummary:
    day: date
    landing_files: int
    landing_digest: str
    received_rows: int
    clean_rows: int
    duplicates_dropped: int
    quarantined_by_reason: dict[str, int] = field(default_factory=dict)
    unreadable_files: list[UnreadableFile] = field(default_factory=list)
    landing_bytes: int = 0
    apps: list[str] = field(default_factory=list)
    min_event_time: datetime | None = None
    max_event_time: datetime | None = None
    events_uri: str = ""
    quarantine_uri: str = ""
    suppressed: int = 0  # rows of forgotten ids (erasure): dropped, never quarantined

    @property
    def quarantined_rows(self) -> int:
        return sum(self.quarantined_by_reason.values())

    @property
    def quarantine_share(self) -> float:
        return self.quarantined_rows / self.received_rows if self.received_rows else 0.0

    @property
    def unreadable_share(self) -> float:
        """The share of the day's landing bytes in files that could not be read."""
        unreadable = sum(problem.bytes for problem in self.unreadable_files)
        return unreadable / self.landing_bytes if self.landing_bytes else 0.0


def _file_records(spark: SparkSession, storage: LakeStorage, unreadable: list) -> DataFrame:
    """One quarantine record per unreadable file: its reason, path and size, no event fields."""
    rows = [(p.reason, p.detail, storage.spark_uri(p.path), p.bytes) for p in unreadable]
    records = spark.createDataFrame(
        rows, "reason string, detail string, source_file string, file_bytes long"
    )
    return records.select(
        "reason",
        *(F.lit(None).cast("string").alias(name) for name in QUARANTINED_FIELDS),
        "detail",
        F.lit(None).cast("string").alias("raw"),
        F.lit(None).cast("binary").alias("raw_bytes"),
        F.lit(None).cast("long").alias("raw_length"),
        F.lit(None).cast("array<string>").alias("raw_strings"),
        SOURCE_FILE,
        "file_bytes",
    )


def _day_figures() -> list[Column]:
    """What ``IngestSummary`` reports of the classified rows: clean rows, their time span and
    apps, identical copies dropped, and rows per reason (``SUPPRESSED`` included)."""
    accepted = F.col("reason").isNull() & ~F.col(COPY)
    return [
        F.count_if(accepted).alias("clean"),
        F.count_if(F.col("reason").isNull() & F.col(COPY)).alias("copies"),
        F.min(F.when(accepted, F.col("event_ts"))).alias("min_time"),
        F.max(F.when(accepted, F.col("event_ts"))).alias("max_time"),
        F.collect_set(F.when(accepted, F.col("app_id"))).alias("apps"),
        *(F.count_if(F.col("reason") == reason).alias(reason) for reason in COUNTED_REASONS),
    ]


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
    its events and no rows from an earlier run. Landing files are never modified. A day without
    lines (no landing files, only its ``_SUCCESS`` marker, empty files, or every line
    quarantined) is a day without events: its partitions are written (empty), so that every
    later asset builds it and queries spanning it answer (real traffic has such days). Files
    landing later change the day's digest, and the landing sensor runs it again.
    """
    rules = rules or ValidationRules()
    files = landing_files(storage, day)
    # A file of no bytes holds no lines: neither read nor damaged (a collector that rotates
    # its file without writing leaves one), while a gzip file needs at least its header.
    with_data = [f for f in files if f.size]
    uris = [storage.spark_uri(f.path) for f in with_data]
    unreadable = unreadable_files(spark, with_data, uris)
    left_out = {problem.path for problem in unreadable}
    readable = [uri for f, uri in zip(with_data, uris, strict=True) if f.path not in left_out]
    # Blank lines are not records (JSON Lines readers skip them); every other line is one.
    landing = (
        spark.read.text(readable).withColumnRenamed("value", LINE)
        if readable
        else spark.createDataFrame([], f"{LINE} string")
    )
    landing = landing.where(F.trim(F.col(LINE)) != "").withColumn(SOURCE_FILE, F.input_file_name())
    checked = check_lines(landing, day, rules)
    suppression = Suppression.load(storage)
    if suppression.digests:
        # Marked as a reason of their own: counted, then left out of both outputs.
        checked = checked.withColumn(
            "reason", F.when(suppression.matches(), F.lit(SUPPRESSED)).otherwise(F.col("reason"))
        )
    checked = checked.persist(StorageLevel.MEMORY_AND_DISK)
    repeated = repeated_event_ids(checked).localCheckpoint(eager=True)
    classified = resolve_duplicates(checked, repeated)
    # The day's figures are observed while its clean rows are written, not counted by a query
    # of their own (another pass over the cached rows and their duplicates' resolution).
    observed = Observation("day")
    try:
        events_uri = storage.spark_uri(events_day(day))
        quarantine_uri = storage.spark_uri(quarantine_day(day))
        # A file per core at least (each task sorts and writes its own part of the cached
        # rows, with no shuffle and no single task doing it all), and at most 2M rows a file.
        (
            clean_events(classified.observe(observed, *_day_figures()))
            .coalesce(max(spark.sparkContext.defaultParallelism, 1))
            .sortWithinPartitions("app_id", "event_type", "user_id")
            .write.mode("overwrite")
            .option("maxRecordsPerFile", ROWS_PER_FILE)
            .parquet(events_uri)
        )
        # An aggregate without groups is one row, rows or none.
        figures = (
            observed_metrics(observed) or classified.select(*_day_figures()).collect()[0].asDict()
        )
        not_suppressed = F.coalesce(F.col("reason") != F.lit(SUPPRESSED), F.lit(True))
        quarantine = quarantined_rows(checked.where(not_suppressed), day, rules).unionByName(
            conflicting_rows(classified, rules)
        )
        if unreadable:
            quarantine = quarantine.unionByName(_file_records(spark, storage, unreadable))
        quarantine.coalesce(1).write.mode("overwrite").parquet(quarantine_uri)
    finally:
        checked.unpersist()
    counts = {reason: int(figures[reason]) for reason in COUNTED_REASONS}
    clean_rows, copies = int(figures["clean"]), int(figures["copies"])

    return IngestSummary(
        day=day,
        landing_files=len(files),
        landing_digest=landing_digest(files),
        received_rows=clean_rows + copies + sum(counts.values()),
        clean_rows=clean_rows,
        duplicates_dropped=copies,
        quarantined_by_reason={r: counts[r] for r in REASONS if counts[r]},
        unreadable_files=unreadable,
        landing_bytes=sum(f.size for f in files),
        apps=sorted(figures["apps"]),
        min_event_time=figures["min_time"],
        max_event_time=figures["max_time"],
        events_uri=events_uri,
        quarantine_uri=quarantine_uri,
        suppressed=counts[SUPPRESSED],
    )
