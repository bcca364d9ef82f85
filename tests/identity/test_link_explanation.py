"""Why two ids are one person (the chain of keys), or the nearest reason they are not."""

from __future__ import annotations

import hashlib

import pytest
from known_identity_lake import (
    D1,
    D2,
    D3,
    EMAIL,
    LOGIN,
    PARTNER,
    PHONE,
    Q1,
    R1,
    RULES,
    S1,
    S2,
    SHARED_LOGIN,
    T1,
    T2,
    U1,
    U2,
    write_identity_lake,
)

from profile_store.identity.link_explanation import (
    BELOW_THRESHOLD,
    NO_SHARED_KEY,
    NON_BRIDGING_KIND,
    QUARANTINED,
    UNKNOWN_ID,
    Hop,
    explain_link,
    shown_key,
)
from profile_store.lake.storage import LocalLakeStorage


def digest(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode()).hexdigest()[:16]


@pytest.fixture(scope="module")
def lake(tmp_path_factory) -> LocalLakeStorage:
    return LocalLakeStorage(write_identity_lake(tmp_path_factory.mktemp("identity_lake")))


def test_linked_ids_get_the_chain_of_keys_from_one_to_the_other(lake):
    link = explain_link(lake, D1, D3, RULES)
    assert link.linked and link.reason is None
    assert link.chain == [
        Hop(D1, D2, "member_id", digest(LOGIN), 1.0),
        Hop(D2, D3, "email_sha256", EMAIL, 0.95),
    ]
    assert link.detail == f"one person (master {D1}), linked in 2 hops"


def test_a_key_of_a_digest_kind_is_shown_as_stored_any_other_as_its_digest():
    assert shown_key("email_sha256", EMAIL) == EMAIL
    assert shown_key("phone", PHONE) == digest(PHONE)
    assert PHONE not in shown_key("phone", PHONE)


def test_a_shared_key_quarantined_as_a_super_node_is_the_reason_with_its_profile_count(lake):
    link = explain_link(lake, Q1, R1, RULES)
    assert not link.linked and link.reason == QUARANTINED
    assert link.detail == (
        f"shared key member_id {digest(SHARED_LOGIN)} of {Q1} and {R1} is quarantined as a "
        "super node: 64 profiles carry it (max_profiles_per_key 50)"
    )


def test_a_shared_id_of_a_kind_that_does_not_bridge_is_the_reason(lake):
    link = explain_link(lake, S1, S2, RULES)
    assert link.reason == NON_BRIDGING_KIND
    assert link.detail.startswith(
        f"{S1} and {S2} share phone {digest(PHONE)}, but phone is not a bridging kind "
        "(bridging: email_sha256, partner_id)"
    )


def test_a_shared_key_lighter_than_the_threshold_is_the_reason(lake):
    link = explain_link(lake, T1, T2, RULES)
    assert link.reason == BELOW_THRESHOLD
    assert f"partner_id {digest(PARTNER)} of {T1} and {T2}" in link.detail
    assert "weight 0.6, below the components' threshold 0.9" in link.detail


def test_ids_that_share_nothing_say_so(lake):
    link = explain_link(lake, U1, U2, RULES)
    assert link.reason == NO_SHARED_KEY
    assert link.detail.startswith("no shared key")


def test_an_id_the_identity_graph_never_saw_is_named(lake):
    link = explain_link(lake, D1, "nobody", RULES)
    assert link.reason == UNKNOWN_ID
    assert link.detail == "nobody: no such profile in the lake's identity graph"


def test_an_id_seen_in_a_component_links_to_itself_whichever_the_others(lake):
    assert explain_link(lake, D2, D2, RULES).linked
