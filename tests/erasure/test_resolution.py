"""Who the person is: the ids given, and the profiles sharing one of their own keys."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from profile_store.erasure.requests import GivenId
from profile_store.erasure.resolution import resolve
from profile_store.lake_storage import LocalLakeStorage


def lake_with_keys(root, rows: list[tuple[str, str, str]]) -> LocalLakeStorage:
    """``identity_keys`` of one day: (key_type, key, profile) rows."""
    folder = root / "identity_keys" / "date=2026-11-01"
    folder.mkdir(parents=True)
    kinds, keys, profiles = zip(*rows, strict=True)
    table = pa.table({"key_type": kinds, "key": keys, "profile": profiles})
    pq.write_table(table, folder / "part-0.parquet")
    return LocalLakeStorage(root)


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


def test_a_given_login_brings_every_profile_that_carried_it(tmp_path):
    lake = lake_with_keys(tmp_path, [("member_id", "m1", "d1"), ("member_id", "m1", "d2")])
    assert resolve(lake, [GivenId("m1", "member_id")]).profiles == {"d1", "d2"}


def test_unknown_ids_resolve_to_themselves_and_are_not_known(tmp_path):
    person = resolve(lake_with_keys(tmp_path, [("member_id", "m1", "d1")]), [GivenId("zz")])
    assert person.profiles == {"zz"} and not person.known
