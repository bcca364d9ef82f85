"""``erasure``: carry out every pending erasure request (``profiles forget``, the admin API).

Not partitioned: a request concerns every day. Launched by ``erasure_sensor`` as soon as a
request is pending, by ``erasure_schedule`` and from the UI. Each request's audit report is in
the materialization's metadata and in the lake; each sketch day it rebuilt is recorded as a
materialization of that ``audience_sketches`` partition.
"""

from dataclasses import asdict
from datetime import date

from dagster import (
    AssetExecutionContext,
    AssetMaterialization,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster_pyspark import LazyPySparkResource

from profile_assets.audience_assets import SKETCH_LG_K
from profile_assets.profile_assets import CompactionConfig
from profile_store.audiences.day_sketches import build_day_sketches
from profile_store.audiences.sketch_rows import MAX_PAIR_ROWS
from profile_store.erasure.erasure_step import ErasureTargets, carry_out
from profile_store.erasure.requests import pending_requests
from profile_store.profiles.table import PROFILE_TABLE, ensure_table
from resources.hbase import HBaseResource
from resources.lake import LakeResource


@asset(
    group_name="privacy",
    kinds={"spark", "hbase"},
    description=(
        "Carries out every pending erasure request: the person's rows leave the lake (landing, "
        "events, quarantine), the identity graph (their components recomputed: components they "
        "bridged split) and the profile state; the others of their components are rewritten in "
        "HBase; the sketch days they appeared on are rebuilt and searched for their hashes. "
        "One audit report per request (no personal data) in erasure/reports/."
    ),
)
def erasure(
    context: AssetExecutionContext,
    config: CompactionConfig,
    spark: LazyPySparkResource,
    lake: LakeResource,
    hbase: HBaseResource,
) -> MaterializeResult:
    storage = lake.storage()
    requests = pending_requests(storage)
    if not requests:
        return MaterializeResult(metadata={"requests": 0, "reports": MetadataValue.json([])})
    session = spark.spark_session
    with hbase.connection() as connection:
        ensure_table(connection, PROFILE_TABLE)
    targets = ErasureTargets(
        connect=hbase.connection,
        address=hbase.thrift_address(),
        compaction=config.settings(),
        identity_threshold=config.weight_threshold,
        major_compaction_waits=hbase.embedded,
    )

    def rebuild(day: date, request_id: str) -> dict:
        counts = build_day_sketches(
            session,
            storage,
            hbase.connection,
            targets.address,
            day,
            SKETCH_LG_K,
            MAX_PAIR_ROWS,
            500,
        )
        context.log_event(
            AssetMaterialization(
                asset_key="audience_sketches",
                partition=day.isoformat(),
                description=f"rebuilt by erasure request {request_id}",
                metadata={**counts, "erasure_request": request_id},
            )
        )
        return counts

    reports = []
    for request in requests:
        report = carry_out(
            session,
            storage,
            targets,
            request,
            lambda day, request_id=request.request_id: rebuild(day, request_id),
        )
        context.log.info(
            f"{report.request_id}: {report.outcome}; {sum(report.rows_removed.values()):,} lake "
            f"rows removed, {len(report.sketch_days_rebuilt)} sketch days rebuilt "
            f"({report.sketch_rows_retaining} rows still retaining a hash) in {report.seconds} s"
        )
        reports.append(report)
    retaining = sum(r.sketch_rows_retaining for r in reports)
    if retaining:
        raise RuntimeError(
            f"{retaining} sketch rows still retain a forgotten id's hash after the rebuild"
        )
    return MaterializeResult(
        metadata={
            "requests": len(reports),
            "reports": MetadataValue.json([asdict(report) for report in reports]),
            "lake_rows_removed": sum(sum(r.rows_removed.values()) for r in reports),
            "sketch_days_rebuilt": sum(len(r.sketch_days_rebuilt) for r in reports),
            "sketch_rows_retaining": retaining,
        }
    )
