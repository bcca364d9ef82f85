"""Identity for your own data: the configured kinds bridge, a kind that bridges nothing is
reported by the identity run (metadata and a warning check) instead of passing silently, every
profile is counted in a component, and the quality check says it had nothing to judge."""

from __future__ import annotations

import gzip
import json

import pytest
from dagster import AssetCheckSeverity, DagsterInstance, materialize

from profile_assets.check_results import NOTHING_TO_JUDGE
from profile_assets.identity_assets import identity_components, identity_edges
from profile_assets.profile_checks import (
    BRIDGING_KINDS_CHECK,
    identity_bridging_kinds,
    identity_quality_check,
)
from profile_assets.raw_events import raw_events
from profile_store.identity.settings import IDENTITY_CONFIG_ENV
from profile_store.lake.layout import SUCCESS_MARKER, landing_day
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAY = "2026-11-03"
ORGANISATIONS = 4
RECORDS_EACH = 3


def registry_rows() -> list[str]:
    """Records of a few organisations: one device id per record, a shared phone and address."""
    return [
        json.dumps(
            {
                "event_id": f"e{org}-{record}",
                "app_id": "registry",
                "user_id": f"record-{org}-{record}",
                "id_type": "cookie",
                "event_time": f"{DAY}T0{record}:00:00.000Z",
                "event_type": "registered",
                "event_attributes": {},
                "alt_ids": {"phone": f"+3120555000{org}", "address": f"street {org}"},
            }
        )
        for org in range(ORGANISATIONS)
        for record in range(RECORDS_EACH)
    ]


def run_day(root, identity: IdentityResource):
    path = root / landing_day(DAY) / "part-00000.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as out:
        out.write("\n".join(registry_rows()) + "\n")
    (root / landing_day(DAY) / SUCCESS_MARKER).write_text("")
    result = materialize(
        [
            raw_events,
            identity_edges,
            identity_bridging_kinds,
            identity_components,
            identity_quality_check,
        ],
        partition_key=DAY,
        resources={
            "spark": spark_resource_from_env({}),
            "lake": LakeResource(root=str(root)),
            "identity": identity,
        },
        instance=DagsterInstance.ephemeral(),
    )
    assert result.success
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    metadata = {
        name: {
            key: value.value
            for key, value in result.asset_materializations_for_node(name)[0].metadata.items()
        }
        for name in ("identity_edges", "identity_components")
    }
    return metadata, checks


@pytest.fixture(scope="module")
def default_rules_run(spark, tmp_path_factory):
    return run_day(tmp_path_factory.mktemp("registry_default"), IdentityResource())


@pytest.fixture(scope="module")
def phone_rules_run(spark, tmp_path_factory):
    config = tmp_path_factory.mktemp("config") / "identity.yaml"
    config.write_text("alt_id_weights:\n  email_sha256: 0.95\n  phone: 0.95\n")
    identity = IdentityResource.from_env({IDENTITY_CONFIG_ENV: str(config)})
    return run_day(tmp_path_factory.mktemp("registry_phone"), identity)


def test_the_run_reports_each_present_kind_that_bridges_nothing(default_rules_run):
    metadata = default_rules_run[0]["identity_edges"]
    every = ORGANISATIONS * RECORDS_EACH
    assert metadata["alt_id_kinds"] == {"address": every, "phone": every}
    assert metadata["non_bridging_alt_id_kinds"] == {"address": every, "phone": every}
    assert metadata["dagster/row_count"] == 0


def test_a_present_kind_that_bridges_nothing_is_a_warning_check(default_rules_run):
    check = default_rules_run[1][BRIDGING_KINDS_CHECK]
    assert check.passed is False
    assert check.severity == AssetCheckSeverity.WARN
    assert check.description.startswith(
        "alt id kinds address, phone are not bridging kinds (bridging: email_sha256): "
        "they will link nothing"
    )


def test_a_kind_the_identity_configuration_lists_bridges(phone_rules_run):
    metadata = phone_rules_run[0]["identity_edges"]
    assert metadata["edges_by_rule"] == {"alt_id": ORGANISATIONS * (RECORDS_EACH - 1)}
    assert metadata["non_bridging_alt_id_kinds"] == {"address": ORGANISATIONS * RECORDS_EACH}


def test_the_warning_names_only_the_kinds_still_not_bridging(phone_rules_run):
    check = phone_rules_run[1][BRIDGING_KINDS_CHECK]
    assert check.passed is False
    assert check.description.startswith("alt id kind address is not a bridging kind")


def test_profiles_of_no_link_are_counted_as_singletons(default_rules_run):
    components = default_rules_run[0]["identity_components"]
    assert components["profiles"] == ORGANISATIONS * RECORDS_EACH
    assert components["singletons"] == ORGANISATIONS * RECORDS_EACH
    assert components["linked_profiles"] == 0


def test_linked_and_singleton_profiles_add_up_to_every_profile(phone_rules_run):
    components = phone_rules_run[0]["identity_components"]
    assert components["components"] == ORGANISATIONS
    assert components["linked_profiles"] == ORGANISATIONS * RECORDS_EACH
    assert components["singletons"] == 0


def test_the_quality_check_says_it_had_nothing_to_judge_without_an_answer_key(default_rules_run):
    check = default_rules_run[1]["identity_quality_check"]
    assert check.passed
    assert check.description.startswith("nothing to judge: no answer key at ")
    assert NOTHING_TO_JUDGE in check.metadata
