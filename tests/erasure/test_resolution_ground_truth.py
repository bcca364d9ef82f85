"""Resolution against the generator's answer key: forgetting anyone removes exactly that person.

A generated lake of two days (shared logins ``test``, ``guest``, ``demo_account`` sent by
dozens of unrelated devices a day, and the blocklisted ``0``, ``unknown``, ``null``, ``""``),
built once by the ingest and identity assets. Then every device of the lake is resolved, with
Arrow only: the profiles resolved never include a device of another person, and include every
device the identity graph's latest components link to the given one.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, timedelta

import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize

from profile_assets.identity_assets import identity_components, identity_edges
from profile_assets.raw_events import raw_events
from profile_store.erasure.requests import ErasureRefused, GivenId
from profile_store.erasure.resolution import IdentityGraph
from profile_store.generator import catalog
from profile_store.generator.lake import generate_lake
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.lake.storage import LocalLakeStorage
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

D1 = date(2026, 11, 1)
DAYS = [D1 + timedelta(days=i) for i in range(2)]
NOISE = {*catalog.SHARED_LOGINS, *catalog.BLOCKLIST_MEMBER_IDS}


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("resolution_lake")
    generate_lake(root, len(DAYS), 4000, seed=11, start_date=D1)
    resources = {
        "spark": spark_resource_from_env({"SPARK_SHUFFLE_PARTITIONS": "2"}),
        "lake": LakeResource(root=str(root)),
        "identity": IdentityResource(),
    }
    instance = DagsterInstance.ephemeral()
    for day in DAYS:
        result = materialize(
            [raw_events, identity_edges, identity_components],
            partition_key=day.isoformat(),
            resources=resources,
            instance=instance,
        )
        assert result.success
    return root


@pytest.fixture(scope="module")
def truth(lake) -> dict[str, str]:
    """device or cookie id -> its person."""
    rows = pq.read_table(lake / "ground_truth" / "identities.parquet").to_pylist()
    return {row["user_id"]: row["person_id"] for row in rows}


@pytest.fixture(scope="module")
def graph(lake) -> IdentityGraph:
    return IdentityGraph.load(LocalLakeStorage(lake))


@pytest.fixture(scope="module")
def profiles(lake) -> list[str]:
    """Every profile of the lake (the events' user ids), as the identity areas hold them."""
    table = pq.read_table(lake / "identity_profiles", columns=["profile"])
    return sorted(set(table.column("profile").to_pylist()))


@pytest.fixture(scope="module")
def components(lake) -> dict[str, set[str]]:
    """profile -> every profile of its latest component (linked profiles only)."""
    assignment = pq.read_table(lake / latest_assignment_dir(LocalLakeStorage(lake))).to_pylist()
    members: dict[str, set[str]] = defaultdict(set)
    for row in assignment:
        members[row["master"]].add(row["profile"])
    return {row["profile"]: members[row["master"]] for row in assignment}


@pytest.fixture(scope="module")
def noisy_devices(lake) -> set[str]:
    """Devices whose events carried a shared login or a blocklisted value."""
    keys = pq.read_table(lake / "identity_keys").to_pylist()
    return {
        row["profile"] for row in keys if row["key_type"] == "member_id" and row["key"] in NOISE
    }


def test_the_lake_has_devices_that_used_shared_logins_and_blocklisted_values(noisy_devices):
    # Otherwise the tests below would not be about the super-node guard at all.
    assert len(noisy_devices) > 200


def test_forgetting_any_device_never_takes_a_device_of_another_person(graph, truth, profiles):
    strangers = {}
    for profile in profiles:
        person = graph.resolve([GivenId(profile)])
        others = {p for p in person.profiles if truth[p] != truth[profile]}
        if others:
            strangers[profile] = sorted(others)[:5]
    assert strangers == {}


def test_forgetting_any_device_takes_every_device_the_graph_links_to_it(
    graph, profiles, components
):
    missed = {}
    for profile in profiles:
        person = graph.resolve([GivenId(profile)])
        left = components.get(profile, {profile}) - person.profiles
        if left:
            missed[profile] = sorted(left)[:5]
    assert missed == {}
    # Not vacuous: many devices are linked to others.
    assert len({frozenset(members) for members in components.values()}) > 20


def test_no_shared_login_or_blocklisted_value_is_suppressed_or_deleted(graph, noisy_devices):
    for profile in sorted(noisy_devices):
        person = graph.resolve([GivenId(profile)])
        assert not (person.suppressed_ids & NOISE), profile
        assert not {key for _, key in person.keys} & NOISE, profile
        assert not person.logins & NOISE, profile


@pytest.mark.parametrize("login", sorted(NOISE - {""}))  # "" is refused as input already
def test_a_quarantined_login_given_as_the_id_is_refused(graph, login):
    with pytest.raises(ErasureRefused, match="quarantined"):
        graph.resolve([GivenId(login, "member_id")])


def test_a_resolution_beyond_the_bound_is_refused_naming_its_size(graph, profiles, components):
    largest = max(components.values(), key=len)
    given = sorted(largest)[0]
    with pytest.raises(ErasureRefused, match=f"{len(largest)} profiles"):
        graph.resolve([GivenId(given)], max_profiles=len(largest) - 1)
    assert graph.resolve([GivenId(given)], max_profiles=len(largest)).profiles >= largest
