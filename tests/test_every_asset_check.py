"""The whole code location on a small generated lake: every asset, then every asset check.

This is the CI gate for data quality: the assets and checks come from ``Definitions`` and the
resources from ``resources_from_env`` (embedded defaults in temporary directories), exactly as
``dagster dev`` wires them; the test fails when any check fails on any day.
"""

from __future__ import annotations

from datetime import date

import pytest
from dagster import DagsterInstance, materialize

from profile_assets.definitions import defs
from profile_store.generator.lake import generate_lake
from resources import resources_from_env

DAYS = ("2026-11-01", "2026-11-02")


@pytest.fixture(scope="module")
def outcomes(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("ci_lake")
    generate_lake(root, len(DAYS), 20_000, seed=5, start_date=date.fromisoformat(DAYS[0]))
    resources = resources_from_env(
        {
            "PROFILES_LAKE_ROOT": str(root),
            "PROFILES_HBASE_DATA_DIR": str(tmp_path_factory.mktemp("hbase")),
            "SPARK_SHUFFLE_PARTITIONS": "2",
        }
    )
    repository = defs.get_repository_def()
    instance = DagsterInstance.ephemeral()
    results = {}
    try:
        for day in DAYS:
            results[day] = materialize(
                [*defs.assets, *defs.asset_checks],
                partition_key=day,
                resources=resources,
                instance=instance,
                raise_on_error=False,
            )
    finally:
        resources["hbase"].close()
    return repository, results


def test_every_asset_materializes_on_every_day(outcomes):
    repository, results = outcomes
    expected = {key.to_user_string() for key in repository.asset_graph.get_all_asset_keys()}
    for day, result in results.items():
        assert result.success, day
        materialized = {
            event.materialization.asset_key.to_user_string()
            for event in result.get_asset_materialization_events()
        }
        assert materialized == expected, day


def test_every_asset_check_runs_and_passes_on_every_day(outcomes):
    repository, results = outcomes
    expected = {key.name for key in repository.asset_graph.asset_check_keys}
    for day, result in results.items():
        evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
        assert set(evaluations) == expected, day
        failed = {name: e.description for name, e in evaluations.items() if not e.passed}
        assert failed == {}, day
