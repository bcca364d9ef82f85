"""The identity assets end to end on a generated lake, judged by its ground truth."""

from __future__ import annotations

from datetime import date

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize
from pyspark.sql import functions as F

from profile_assets.identity_assets import identity_components, identity_edges
from profile_assets.raw_events import raw_events
from profile_store.generator.lake import generate_lake
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.lake.storage import LocalLakeStorage
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAYS = ("2026-11-01", "2026-11-02")


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("identity_lake")
    generate_lake(root, len(DAYS), 6000, seed=21, start_date=date.fromisoformat(DAYS[0]))
    resources = {
        "spark": spark_resource_from_env({}),
        "lake": LakeResource(root=str(root)),
        "identity": IdentityResource(),
    }
    instance = DagsterInstance.ephemeral()
    metadata = {}
    for day in DAYS:
        result = materialize(
            [raw_events, identity_edges, identity_components],
            partition_key=day,
            resources=resources,
            instance=instance,
        )
        assert result.success
        for event in result.get_asset_materialization_events():
            materialization = event.materialization
            metadata[(materialization.asset_key.to_user_string(), day)] = {
                key: value.value for key, value in materialization.metadata.items()
            }
    return root, metadata


def test_no_edge_is_made_from_a_shared_login_or_a_blocklisted_value(spark, built):
    root, _ = built
    noise = pq.read_table(root / "ground_truth" / "noise.parquet").to_pylist()
    values = {row["value"] for row in noise}
    edges = spark.read.parquet(str(root / "identity_edges"))
    quarantine = spark.read.parquet(str(root / "identity_quarantine"))
    assert edges.where(edges.key.isin(*values)).count() == 0
    reasons = {(r.key, r.reason) for r in quarantine.select("key", "reason").collect()}
    assert reasons >= {
        (row["value"], row["kind"].replace("shared_login", "super_node"))
        for row in noise
        if row["devices"] > 0
    }


def test_every_component_is_one_person_and_the_metadata_says_what_changed(spark, built):
    root, metadata = built
    truth = spark.read.parquet(str(root / "ground_truth" / "identities.parquet"))
    current = spark.read.parquet(str(root / latest_assignment_dir(LocalLakeStorage(root))))
    persons = (
        current.join(truth.withColumnRenamed("user_id", "profile"), "profile")
        .groupBy("master")
        .agg(F.countDistinct("person_id"))
        .collect()
    )
    assert persons and all(row[1] == 1 for row in persons)
    second = metadata[("identity_components", DAYS[1])]
    assert second["mode"] == "incremental"
    assert second["components"] == len(persons) and second["profiles_touched"] > 0
    assert sum(second["size_histogram"].values()) == second["components"]


def test_merges_count_the_known_persons_that_the_second_day_absorbed_into_another(spark, built):
    root, metadata = built
    before = _assignment(spark, root, DAYS[0])
    after = _assignment(spark, root, DAYS[1])
    seen_before = {
        row.profile
        for row in spark.read.parquet(str(root / "identity_profiles" / f"date={DAYS[0]}"))
        .select("profile")
        .collect()
    }
    # A known person: a day-1 component (named by its master) or a day-1 id without links.
    known = {profile: before.get(profile, profile) for profile in seen_before}
    persons_by_master: dict[str, set[str]] = {}
    for profile, person in known.items():
        if profile in after:
            persons_by_master.setdefault(after[profile], set()).add(person)
    merges = sum(len(persons) - 1 for persons in persons_by_master.values())
    second = metadata[("identity_components", DAYS[1])]
    assert merges > 0 and second["merges"] == merges
    assert 0 <= second["component_merges"] <= merges


def _assignment(spark, root, day: str) -> dict[str, str]:
    path = root / "identity_components" / f"date={day}"
    return {row.profile: row.master for row in spark.read.parquet(str(path)).collect()}
