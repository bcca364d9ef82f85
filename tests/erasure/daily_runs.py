"""The daily assets over an erasure test's lake: its resources, and its days built."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from pathlib import Path

from dagster import DagsterInstance, ExecuteInProcessResult, materialize

from profile_assets.definitions import daily_assets
from resources.hbase import HBaseResource
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env


def lake_resources(root: Path, hbase: HBaseResource) -> dict:
    """Spark in local mode (2 shuffle partitions), the lake at ``root``, ``hbase``."""
    return {
        "spark": spark_resource_from_env({"SPARK_SHUFFLE_PARTITIONS": "2"}),
        "lake": LakeResource(root=str(root)),
        "identity": IdentityResource(),
        "hbase": hbase,
    }


def build_days(
    days: Iterable[date], resources: dict, instance: DagsterInstance, run_config: dict | None = None
) -> list[ExecuteInProcessResult]:
    """One run of every daily asset per day, in order; each must succeed (also the erasure
    benchmarks' setup)."""
    results = []
    for day in days:
        result = materialize(
            list(daily_assets),
            partition_key=day.isoformat(),
            resources=resources,
            instance=instance,
            run_config=run_config,
        )
        assert result.success, day
        results.append(result)
    return results
