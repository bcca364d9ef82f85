"""``erasure``: carry out every pending erasure request (``profiles forget``, the admin API).

Not partitioned: a request concerns every day. Launched by ``erasure_sensor`` as soon as a
request is pending, by ``erasure_schedule`` and from the UI. The pending requests are carried
out together, in one batch (``erasure_step``): one lake rewrite, one sketch rebuild per day,
one major compaction per table, however many requests. Each request's audit report is in the
materialization's metadata and in the lake; each sketch day the batch rebuilt is recorded as a
materialization of that ``audience_sketches`` partition. A request refused (its person grew past
its bound since) or whose hashes a rebuilt sketch row still holds stays pending: the others are
done and materialized all the same, and the blocking check ``requests_carried_out`` then fails
the run, naming each pending request and why.
"""

from dataclasses import asdict
from datetime import date

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetMaterialization,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster_pyspark import LazyPySparkResource

from profile_assets.audience_assets import SKETCH_LG_K
from profile_assets.compaction_assets import CompactionConfig
from profile_store.audiences.day_sketches import build_day_sketches
from profile_store.audiences.sketch_rows import MAX_PAIR_ROWS
from profile_store.erasure.batch import unfinished_batches
from profile_store.erasure.erasure_step import ErasureTargets, carry_out_pending
from profile_store.erasure.requests import pending_requests
from profile_store.profiles.rules_in_force import read_rules_in_force
from profile_store.profiles.table import PROFILE_TABLE, ensure_table
from resources.hbase import HBaseResource
from resources.lake import LakeResource

CARRIED_OUT = "requests_carried_out"


@asset(
    group_name="privacy",
    kinds={"spark", "hbase"},
    description=(
        "Carries out every pending erasure request, all in one batch: the persons' rows leave "
        "the lake (landing, events, quarantine), the identity graph (their components "
        "recomputed: components they bridged split) and the profile state in one rewrite; the "
        "others of their components are rewritten in HBase; each day they appeared on is "
        "rebuilt once and searched for all their hashes. One audit report per request (no "
        "personal data) in erasure/reports/; a failed run's batch is resumed by the next."
    ),
    check_specs=[
        AssetCheckSpec(
            CARRIED_OUT,
            asset="erasure",
            blocking=True,
            description="Every pending request was carried out: none refused (a person grown "
            "past its request's bound, a key quarantined since), none with a hash a rebuilt "
            "sketch row retains. Those stay pending, named here; the run fails.",
        )
    ],
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
    if not requests and not unfinished_batches(storage):
        return MaterializeResult(
            metadata={"requests": 0, "reports": MetadataValue.json([])},
            check_results=[_carried_out({}, [])],
        )
    session = spark.spark_session
    with hbase.connection() as connection:
        ensure_table(connection, PROFILE_TABLE)
    targets = ErasureTargets(
        connect=hbase.connection,
        address=hbase.thrift_address(),
        compaction=config.settings(read_rules_in_force(storage).rules),
        identity_threshold=config.weight_threshold,
    )

    def rebuild(day: date, batch_id: str) -> dict:
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
                description=f"rebuilt by erasure batch {batch_id}",
                metadata={**counts, "erasure_batch": batch_id},
            )
        )
        return counts

    outcomes = carry_out_pending(session, storage, targets, requests, rebuild)
    reports = [report for outcome in outcomes for report in outcome.reports]
    for outcome in outcomes:
        if outcome.reports:
            figures = outcome.reports[0].batch
            context.log.info(
                f"batch {figures.batch_id}: {len(outcome.reports)} of {figures.requests} "
                f"requests completed; {sum(figures.rows_removed.values()):,} lake rows removed, "
                f"{len(figures.sketch_days_rebuilt)} sketch days rebuilt, "
                f"{figures.sketch_rows_retaining} sketch rows still retaining a hash, "
                f"in {figures.seconds} s"
            )
    refused = {rid: why for outcome in outcomes for rid, why in outcome.refused.items()}
    retained = [rid for outcome in outcomes for rid in outcome.retained]
    return MaterializeResult(
        metadata={
            "requests": len(reports),
            "batches": MetadataValue.json([o.batch_id for o in outcomes if o.batch_id]),
            "reports": MetadataValue.json([asdict(report) for report in reports]),
            "lake_rows_removed": sum(
                sum(o.reports[0].batch.rows_removed.values()) for o in outcomes if o.reports
            ),
            "sketch_days_rebuilt": sum(
                len(o.reports[0].batch.sketch_days_rebuilt) for o in outcomes if o.reports
            ),
            "still_pending": len(refused) + len(retained),
        },
        check_results=[_carried_out(refused, retained)],
    )


def _carried_out(refused: dict[str, str], retained: list[str]) -> AssetCheckResult:
    """Fails naming each request left pending and why (ids of requests only)."""
    lines = [f"{rid}: refused, still pending: {why}" for rid, why in sorted(refused.items())]
    lines += [f"{rid}: a rebuilt sketch row retains its hash, still pending" for rid in retained]
    return AssetCheckResult(
        check_name=CARRIED_OUT,
        passed=not lines,
        severity=AssetCheckSeverity.ERROR,
        description="\n".join(lines) or "every pending request was carried out",
        metadata={
            "refused": MetadataValue.json(refused),
            "retained": MetadataValue.json(retained),
        },
    )
