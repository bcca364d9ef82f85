"""``ProfileReader`` against a real embedded gateway holding ``known_profiles`` (conftest.py)."""

from __future__ import annotations

import pytest
from known_profiles import (
    A1,
    A2,
    A3,
    ANN_EMAIL,
    B1,
    B2,
    BROKEN,
    C1,
    DAY,
    FEED_ONLY,
    FEED_SEGMENTS,
    LIVE_A,
    LIVE_A2,
    LIVE_B,
    MASTERS,
    MEMBER_B,
    NOW,
    PERSON_A,
    PERSON_B,
    STALE_EMAIL,
)

from profile_store.profiles.reads import (
    MAX_IDS,
    Connection,
    CorruptRow,
    Edge,
    InvalidRequest,
    ProfileReader,
    key_types_from_env,
)

GET = "getRowWithColumns"
MULTI_GET = "getRowsWithColumns"


def segments_of(reader: ProfileReader, id: str, **kwargs) -> dict[str, int]:
    answer = reader.segments(id, now_ms=NOW, **kwargs)
    assert answer is not None
    return answer.segments


# --- segments -----------------------------------------------------------------------------------


def test_expired_segments_are_never_returned_by_any_read(reader):
    expired = {"lapsed", "ends-now", "stale", "old-news"}
    for id in [*PERSON_A, *PERSON_B]:
        assert not expired & set(segments_of(reader, id))
        assert not expired & set(reader.profile(id, now_ms=NOW).segments)
    for segments in reader.segments_many([*PERSON_A, *PERSON_B], now_ms=NOW).values():
        assert not expired & set(segments)


def test_a_segment_expiring_exactly_now_is_expired_and_live_a_millisecond_before(reader):
    assert "ends-now" not in segments_of(reader, A1)
    assert reader.segments(A1, now_ms=NOW - 1).segments["ends-now"] == NOW


@pytest.mark.parametrize(("person", "live"), [([A1, A3], LIVE_A), (PERSON_B, LIVE_B)])
def test_every_compacted_id_of_a_person_returns_identical_segments(reader, person, live):
    for id in person:
        assert segments_of(reader, id) == live


def test_an_unsynced_segment_counts_for_its_own_id_and_the_later_expiry_wins(reader):
    assert segments_of(reader, A2) == LIVE_A2
    assert "autos" not in segments_of(reader, A1)  # until compaction spreads it


def test_a_row_written_only_by_the_feed_answers_its_unsynced_segments(reader):
    answer = reader.segments(FEED_ONLY, now_ms=NOW)
    assert answer.segments == FEED_SEGMENTS and answer.profile == FEED_ONLY


def test_segments_of_an_unknown_id_is_none(reader):
    assert reader.segments("cookie-nobody", now_ms=NOW) is None
    assert reader.segments("cookie-nobody", key_type="email_sha256", now_ms=NOW) is None


def test_a_profile_id_costs_one_round_trip(counted_reader):
    reader, calls = counted_reader
    answer = reader.segments(A3, now_ms=NOW)
    assert answer.segments == LIVE_A and not answer.via_lookup
    assert calls == [MULTI_GET]


def test_an_alternate_id_is_answered_through_the_lookup_in_two_round_trips(counted_reader):
    reader, calls = counted_reader
    answer = reader.segments(ANN_EMAIL, key_type="email_sha256", now_ms=NOW)
    assert (answer.profile, answer.via_lookup, answer.segments) == (A1, True, LIVE_A)
    assert calls == [MULTI_GET, GET]


def test_a_profile_id_passed_with_a_key_type_still_costs_one_round_trip(counted_reader):
    reader, calls = counted_reader
    answer = reader.segments(B2, key_type="member_id", now_ms=NOW)
    assert (answer.profile, answer.via_lookup, answer.segments) == (B2, False, LIVE_B)
    assert calls == [MULTI_GET]


def test_a_lookup_naming_a_missing_master_is_unknown(reader):
    assert reader.segments(STALE_EMAIL, key_type="email_sha256", now_ms=NOW) is None


def test_a_batch_of_25_ids_is_one_round_trip(counted_reader):
    reader, calls = counted_reader
    ids = [*PERSON_A, *PERSON_B] + [f"cookie-unknown-{i}" for i in range(20)]
    answers = reader.segments_many(ids, now_ms=NOW)
    assert calls == [MULTI_GET]
    assert len(ids) == 25 and list(answers) == ids
    assert answers[A1] == answers[A3] == LIVE_A and answers[A2] == LIVE_A2
    assert answers[B1] == answers[B2] == LIVE_B


def test_a_batch_maps_unknown_ids_to_empty_segments_and_repeats_to_one_entry(reader):
    answers = reader.segments_many(["cookie-nobody", B1, B1], now_ms=NOW)
    assert answers == {"cookie-nobody": {}, B1: LIVE_B}


def test_a_batch_tells_an_unknown_id_from_a_known_id_without_live_segments(reader):
    years_later = NOW + 10 * 365 * 86_400_000  # every segment has expired by then
    batch = reader.segments_batch([A1, "cookie-nobody"], now_ms=years_later)
    assert batch.segments == {A1: {}, "cookie-nobody": {}}
    assert batch.unknown == ["cookie-nobody"]


def test_a_batch_with_alternate_ids_costs_two_round_trips(counted_reader):
    reader, calls = counted_reader
    ids = [ANN_EMAIL, MEMBER_B, A3, STALE_EMAIL, "nobody"]
    answers = reader.segments_many(ids, key_type="member_id", now_ms=NOW)
    assert answers == {ANN_EMAIL: {}, MEMBER_B: LIVE_B, A3: LIVE_A, STALE_EMAIL: {}, "nobody": {}}
    assert calls == [MULTI_GET, MULTI_GET]


def test_a_batch_without_alternate_ids_among_them_stays_one_round_trip(counted_reader):
    reader, calls = counted_reader
    reader.segments_many([A1, B2, "nobody"], key_type="email_sha256", now_ms=NOW)
    assert calls == [MULTI_GET]


# --- connections and linked ids -----------------------------------------------------------------


def test_two_non_master_ids_of_one_person_are_connected_in_one_round_trip(counted_reader):
    reader, calls = counted_reader
    assert reader.connected(A2, A3) == Connection(A2, A3, True, A1, A1, None)
    assert calls == [MULTI_GET]


@pytest.mark.parametrize(("a", "b"), [(A1, A2), (A2, A1)])
def test_a_master_and_its_id_report_their_direct_edge_in_either_order(reader, a, b):
    answer = reader.connected(a, b)
    assert answer.connected and answer.edge == Edge(0.9, ("member_id",))


def test_ids_of_different_persons_are_not_connected(reader):
    answer = reader.connected(A2, B2)
    assert (answer.connected, answer.master_a, answer.master_b, answer.edge) == (
        False,
        A1,
        B1,
        None,
    )


def test_an_unknown_id_is_connected_to_nothing_not_even_itself(reader):
    assert reader.connected("nobody", A1).master_a is None
    assert not reader.connected("nobody", A1).connected
    assert not reader.connected("nobody", "nobody").connected


def test_an_id_is_connected_to_itself(reader):
    assert reader.connected(B2, B2) == Connection(B2, B2, True, B1, B1, None)


def test_linked_profiles_lists_the_other_ids_of_the_person(reader):
    answer = reader.linked_profiles(A2)
    assert (answer.master, answer.devices, answer.truncated) == (A1, 3, False)
    assert answer.linked == {A1: "cookie", A3: "gaid"}


def test_linked_profiles_is_truncated_by_the_limit(reader):
    answer = reader.linked_profiles(A2, limit=1)
    assert answer.linked == {A1: "cookie"} and answer.truncated


def test_linked_profiles_is_truncated_when_compaction_capped_the_list(reader):
    answer = reader.linked_profiles(C1, limit=100)
    assert answer.devices == 7 and len(answer.linked) == 2 and answer.truncated


def test_linked_profiles_of_an_unknown_id_is_none(reader):
    assert reader.linked_profiles("nobody") is None


# --- masters ------------------------------------------------------------------------------------


@pytest.mark.parametrize("page_size", [1, 2, 3, 4, 100])
def test_masters_paging_returns_each_master_exactly_once(reader, page_size):
    seen, after, pages = [], None, 0
    while True:
        page = reader.masters(page_size=page_size, after=after)
        assert len(page.ids) <= page_size
        seen += page.ids
        pages += 1
        if page.next_after is None:
            break
        after = page.next_after
    assert seen == MASTERS
    assert pages == -(-len(MASTERS) // page_size)


def test_masters_are_filtered_on_the_server(counted_reader):
    reader, calls = counted_reader
    assert reader.masters(page_size=100).ids == MASTERS
    assert calls[0] == "scannerOpenWithScan" and calls[-1] == "scannerClose"
    assert calls.count("scannerGetList") <= 2


# --- whole profile ------------------------------------------------------------------------------


def test_profile_decays_counters_to_the_given_now(reader):
    assert reader.profile(A1, now_ms=NOW).counters == {"page_view": 3.0, "purchase": 2.0}
    assert reader.profile(A3, now_ms=NOW + DAY).counters["purchase"] == pytest.approx(1.0)
    assert reader.profile(A3, now_ms=NOW - 3 * DAY).counters["purchase"] == 8.0


def test_profile_holds_live_segments_master_devices_and_first_seen(reader):
    view = reader.profile(A2, now_ms=NOW)
    assert (view.master, view.is_master, view.devices, view.id_type) == (A1, False, 3, "idfa")
    assert view.segments == LIVE_A2
    assert view.unsynced == {"autos": LIVE_A2["autos"], "travel": LIVE_A2["travel"]}
    assert view.first_seen_ms == NOW - 29 * DAY and view.linked == {A1: "cookie", A3: "gaid"}
    assert reader.profile(A1, now_ms=NOW).is_master


def test_profile_of_an_unknown_id_is_none(reader):
    assert reader.profile("nobody") is None


def test_a_row_that_does_not_decode_raises_corrupt_row_naming_it(reader):
    with pytest.raises(CorruptRow, match=BROKEN):
        reader.segments(BROKEN)


# --- input checks -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("read", "field"),
    [
        (lambda r: r.segments(""), "id"),
        (lambda r: r.segments("x" * 2000), "id"),
        (lambda r: r.segments("\ud800"), "id"),
        (lambda r: r.segments(A1, key_type=""), "key_type"),
        (lambda r: r.segments(A1, now_ms=-1), "now_ms"),
        (lambda r: r.segments_many([]), "ids"),
        (lambda r: r.segments_many(A1), "ids"),
        (lambda r: r.segments_many([A1] * (MAX_IDS + 1)), "ids"),
        (lambda r: r.segments_many([A1, ""]), "ids[1]"),
        (lambda r: r.connected(A1, ""), "b"),
        (lambda r: r.linked_profiles(A1, limit=0), "limit"),
        (lambda r: r.masters(page_size=0), "page_size"),
        (lambda r: r.masters(after=""), "after"),
    ],
    ids=[
        "empty-id",
        "long-id",
        "surrogate-id",
        "empty-key-type",
        "negative-now",
        "no-ids",
        "ids-as-a-string",
        "too-many-ids",
        "empty-id-in-batch",
        "empty-b",
        "limit-0",
        "page-size-0",
        "empty-after",
    ],
)
def test_invalid_inputs_raise_value_error_naming_the_field(reader, read, field):
    with pytest.raises(ValueError) as raised:
        read(reader)
    assert isinstance(raised.value, InvalidRequest) and raised.value.field == field
    assert str(raised.value).startswith(f"{field}: ")


def test_an_unknown_key_type_is_an_error_naming_the_known_types(reader):
    with pytest.raises(InvalidRequest, match=r"key_type: unknown key type 'hashed_email' "):
        reader.segments(ANN_EMAIL, key_type="hashed_email", now_ms=NOW)
    with pytest.raises(InvalidRequest, match=r"\(known: member_id, email_sha256\)"):
        reader.segments_many([ANN_EMAIL], key_type="hashed_email", now_ms=NOW)


def test_the_known_key_types_come_from_the_environment_when_listed():
    assert key_types_from_env({}) == ("member_id", "email_sha256")
    assert key_types_from_env({"PROFILES_KEY_TYPES": "member_id, phone_sha256"}) == (
        "member_id",
        "phone_sha256",
    )


def test_unlisted_known_key_types_are_the_kinds_the_identity_configuration_bridges(tmp_path):
    config = tmp_path / "identity.yaml"
    config.write_text("alt_id_weights: {email_sha256: 0.95, phone: 0.95}\n")
    assert key_types_from_env({"PROFILES_IDENTITY_CONFIG": str(config)}) == (
        "member_id",
        "email_sha256",
        "phone",
    )


def test_a_bad_identity_configuration_is_an_invalid_request_naming_it(tmp_path):
    config = tmp_path / "identity.yaml"
    config.write_text("alt_id_weights: {phone: 3}\n")
    with pytest.raises(InvalidRequest, match="PROFILES_IDENTITY_CONFIG: .*alt_id_weights.phone"):
        key_types_from_env({"PROFILES_IDENTITY_CONFIG": str(config)})
