"""``raw_events``: a landing day validated into the clean lake and its quarantine."""

from datetime import date

from dagster import (
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)
from dagster_pyspark import LazyPySparkResource
from pydantic import Field

from profile_assets.partitions import daily_partitions
from profile_store.events.ingest import IngestSummary, ingest_day
from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.events.validation import ValidationRules
from resources.lake import LakeResource

EVENTS_TABLE_SCHEMA = TableSchema(
    columns=[TableColumn(f.name, f.dataType.simpleString()) for f in EVENTS_SCHEMA.fields]
)


class RawEventsConfig(Config):
    max_attributes: int = Field(default=100, description="More attributes: quarantined.")
    max_attribute_value_length: int = Field(
        default=1024, description="A longer attribute value: quarantined."
    )
    max_raw_bytes: int = Field(
        default=4096,
        description=(
            "A quarantined line keeps at most its first this many bytes in `raw`, with its whole "
            "length in `raw_length` (and, when cut, its short JSON strings in `raw_strings`)."
        ),
    )


def ingest_metadata(summary: IngestSummary) -> dict:
    return {
        "dagster/row_count": summary.clean_rows,
        "received_rows": summary.received_rows,
        "quarantined_rows": summary.quarantined_rows,
        "quarantined_pct": round(summary.quarantine_share * 100, 4),
        "quarantined_by_reason": MetadataValue.json(summary.quarantined_by_reason),
        "duplicates_dropped": summary.duplicates_dropped,
        # Rows of forgotten ids (erasure requests): dropped, neither kept nor quarantined.
        "suppressed": summary.suppressed,
        "landing_files": summary.landing_files,
        "unreadable_files": len(summary.unreadable_files),
        "unreadable_bytes_pct": round(summary.unreadable_share * 100, 4),
        "unreadable_file_list": MetadataValue.json(
            [
                {"path": f.path, "reason": f.reason, "bytes": f.bytes, "detail": f.detail}
                for f in summary.unreadable_files
            ]
        ),
        "landing_digest": summary.landing_digest,
        "apps": MetadataValue.json(summary.apps),
        "min_event_time": str(summary.min_event_time),
        "max_event_time": str(summary.max_event_time),
        "events_path": MetadataValue.path(summary.events_uri),
        "quarantine_path": MetadataValue.path(summary.quarantine_uri),
        "dagster/column_schema": MetadataValue.table_schema(EVENTS_TABLE_SCHEMA),
    }


@asset(
    partitions_def=daily_partitions,
    group_name="lake",
    kinds={"spark", "parquet"},
    description=(
        "One UTC day of events: landing JSON validated, deduplicated by event_id and written "
        "as Parquet to events/date=YYYY-MM-DD; rejected rows go to quarantine/ with a reason."
    ),
)
def raw_events(
    context: AssetExecutionContext,
    config: RawEventsConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
) -> MaterializeResult:
    day = date.fromisoformat(context.partition_key)
    rules = ValidationRules(
        max_attributes=config.max_attributes,
        max_attribute_value_length=config.max_attribute_value_length,
        max_raw_bytes=config.max_raw_bytes,
    )
    summary = ingest_day(spark.spark_session, lake.storage(), day, rules)
    context.log.info(
        f"{day}: {summary.clean_rows:,} clean rows, {summary.quarantined_rows:,} quarantined, "
        f"{summary.duplicates_dropped:,} duplicates dropped, {summary.suppressed:,} suppressed"
    )
    for unreadable in summary.unreadable_files:
        context.log.warning(
            f"{day}: {unreadable.path} ({unreadable.bytes:,} bytes) quarantined whole, "
            f"{unreadable.reason}: {unreadable.detail}"
        )
    return MaterializeResult(metadata=ingest_metadata(summary))
