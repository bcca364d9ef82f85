"""What an asset recorded when it materialized the partition a check judges.

Checks read the figures the asset already computed (counts, kinds) from its materialization
instead of re-reading the lake for them: each such re-read costs Spark jobs on every day.
"""

from dagster import AssetCheckExecutionContext, AssetKey, AssetRecordsFilter


def recorded_metadata(context: AssetCheckExecutionContext, asset_key: AssetKey) -> dict | None:
    """The metadata of the asset's latest materialization of the check's partition, or None
    when this instance has no record of one."""
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=asset_key, asset_partitions=[context.partition_key]), limit=1
    ).records
    return dict(records[0].asset_materialization.metadata) if records else None
