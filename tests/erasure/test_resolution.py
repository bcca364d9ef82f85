"""Who the person is: the ids given, and the profiles the identity graph's trusted links reach."""

from __future__ import annotations

import pytest
from identity_areas import lake_with_keys

from profile_store.erasure.requests import ErasureRefused, GivenId
from profile_store.erasure.resolution import resolve


def test_devices_sharing_a_login_are_one_person(tmp_path):
    lake = lake_with_keys(tmp_path, [("member_id", "m1", "d1"), ("member_id", "m1", "d2")])
    assert resolve(lake, [GivenId("d1")]).profiles == {"d1", "d2"}


def test_devices_sharing_an_email_and_no_login_are_one_person(tmp_path):
    lake = lake_with_keys(tmp_path, [("email_sha256", "e1", "d1"), ("email_sha256", "e1", "d2")])
    person = resolve(lake, [GivenId("d1")])
    assert person.profiles == {"d1", "d2"}
    assert "e1" in person.suppressed_ids


def test_an_email_seen_under_another_login_is_not_followed(tmp_path):
    rows = [
        ("member_id", "m1", "d1"),
        ("email_sha256", "shared", "d1"),
        ("member_id", "m2", "x1"),
        ("email_sha256", "shared", "x1"),
    ]
    person = resolve(lake_with_keys(tmp_path, rows), [GivenId("d1")])
    assert person.profiles == {"d1"}
    assert "shared" not in person.suppressed_ids


def test_a_device_linked_by_its_email_only_resolves_to_the_whole_person(tmp_path):
    # From the device without a login as from the one with it: the same person.
    rows = [("member_id", "m1", "d1"), ("email_sha256", "e1", "d1"), ("email_sha256", "e1", "d2")]
    lake = lake_with_keys(tmp_path, rows)
    assert resolve(lake, [GivenId("d2")]).profiles == {"d1", "d2"}
    assert resolve(lake, [GivenId("d1")]).profiles == {"d1", "d2"}


def test_a_quarantined_login_is_not_followed_suppressed_or_deleted(tmp_path):
    rows = [("member_id", "guest", "d1"), ("member_id", "guest", "x1"), ("member_id", "m1", "d1")]
    lake = lake_with_keys(tmp_path, rows, quarantined=[("member_id", "guest")])
    person = resolve(lake, [GivenId("d1")])
    assert person.profiles == {"d1"}
    assert "guest" not in person.suppressed_ids
    assert ("member_id", "guest") not in person.keys
    assert person.quarantined == {("member_id", "guest")}


def test_an_empty_login_is_never_a_key_of_the_person(tmp_path):
    lake = lake_with_keys(tmp_path, [("member_id", "", "d1"), ("member_id", "", "x1")])
    person = resolve(lake, [GivenId("d1")])
    assert person.profiles == {"d1"} and person.keys == frozenset()
    assert "" not in person.suppressed_ids


def test_an_edge_below_the_components_threshold_is_not_followed_but_its_row_goes(tmp_path):
    rows = [("ip24_user_agent", "10.0.0|ua|0", "d1"), ("ip24_user_agent", "10.0.0|ua|0", "x1")]
    person = resolve(lake_with_keys(tmp_path, rows), [GivenId("d1")])
    assert person.profiles == {"d1"}
    assert person.edges == {("d1", "x1")}  # the edge row naming them is deleted all the same


def test_a_given_login_brings_every_profile_that_carried_it(tmp_path):
    lake = lake_with_keys(tmp_path, [("member_id", "m1", "d1"), ("member_id", "m1", "d2")])
    assert resolve(lake, [GivenId("m1", "member_id")]).profiles == {"d1", "d2"}


def test_a_given_quarantined_login_is_refused(tmp_path):
    rows = [("member_id", "guest", "d1"), ("member_id", "guest", "x1")]
    lake = lake_with_keys(tmp_path, rows, quarantined=[("member_id", "guest")])
    with pytest.raises(ErasureRefused, match="ids: member_id 'guest' is quarantined"):
        resolve(lake, [GivenId("guest", "member_id")])


def test_a_given_placeholder_login_is_refused_even_before_the_graph_saw_it(tmp_path):
    # Suppressing "null" would drop every anonymous event that carries the placeholder.
    lake = lake_with_keys(tmp_path, [("member_id", "m1", "d1")])
    with pytest.raises(ErasureRefused, match="ids: member_id 'NULL' is quarantined"):
        resolve(lake, [GivenId("NULL", "member_id")])


def test_a_person_beyond_the_bound_is_refused(tmp_path):
    rows = [("member_id", "m1", f"d{i}") for i in range(4)]
    lake = lake_with_keys(tmp_path, rows)
    with pytest.raises(ErasureRefused, match="resolve to 4 profiles .* bound of 3"):
        resolve(lake, [GivenId("d0")], max_profiles=3)
    assert len(resolve(lake, [GivenId("d0")], max_profiles=4).profiles) == 4


def test_an_upper_case_gaid_resolves_to_the_lower_case_profile(tmp_path):
    gaid = "38400000-8cf0-11bd-b23e-10b96e40000d"
    lake = lake_with_keys(tmp_path, [("member_id", "m1", gaid)], id_types={gaid: "gaid"})
    person = resolve(lake, [GivenId(gaid.upper())])
    assert person.profiles == {gaid}
    assert {gaid, gaid.upper()} <= person.suppressed_ids


def test_a_lower_case_idfa_resolves_to_the_upper_case_profile(tmp_path):
    idfa = "6D92078A-8246-4BA4-AE5B-76104861E7DC"
    lake = lake_with_keys(tmp_path, [("member_id", "m1", idfa)], id_types={idfa: "idfa"})
    assert resolve(lake, [GivenId(idfa.lower())]).profiles == {idfa}


def test_a_cookie_is_not_matched_in_another_case(tmp_path):
    lake = lake_with_keys(tmp_path, [("member_id", "m1", "AbC.123")])
    assert resolve(lake, [GivenId("abc.123")]).profiles == {"abc.123"}


def test_unknown_ids_resolve_to_themselves_and_are_not_known(tmp_path):
    person = resolve(lake_with_keys(tmp_path, [("member_id", "m1", "d1")]), [GivenId("zz")])
    assert person.profiles == {"zz"} and not person.known
