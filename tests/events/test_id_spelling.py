"""Ingest writes ids of case-insensitive kinds in one spelling, before anything compares them."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from test_ingest import DAY, event, lines, write_landing

from profile_store.events.ingest import ingest_day
from profile_store.lake.storage import LocalLakeStorage
from profile_store.suppression.salted_digests import add_to_list

IDFA = "6d9f1c2a-ab12-4e0f-9a7b-0c1d2e3f4a5b"
GAID = "1A2B3C4D-AB12-4E0F-9A7B-0C1D2E3F4A5B"
EMAIL = "AB" * 32


@pytest.fixture
def storage(tmp_path):
    return LocalLakeStorage(tmp_path)


def clean(spark, summary) -> dict:
    return {r.event_id: r for r in spark.read.parquet(summary.events_uri).collect()}


def test_an_idfa_is_stored_upper_case(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1", user_id=IDFA, id_type="idfa")))
    assert clean(spark, ingest_day(spark, storage, DAY))["1"].user_id == IDFA.upper()


def test_a_gaid_is_stored_lower_case(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1", user_id=GAID, id_type="gaid")))
    assert clean(spark, ingest_day(spark, storage, DAY))["1"].user_id == GAID.lower()


def test_a_cookie_keeps_its_case(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1", user_id="GA1.2.AbC", id_type="cookie")))
    assert clean(spark, ingest_day(spark, storage, DAY))["1"].user_id == "GA1.2.AbC"


def test_hex_digest_alternate_ids_are_stored_lower_case_and_others_as_sent(
    spark, storage, tmp_path
):
    alt_ids = {"email_sha256": EMAIL, "phone_md5": "ABCD", "crm_id": "Cust-7"}
    write_landing(tmp_path, lines(event("1", alt_ids=alt_ids)))
    stored = clean(spark, ingest_day(spark, storage, DAY))["1"].alt_ids
    assert stored == {"email_sha256": EMAIL.lower(), "phone_md5": "abcd", "crm_id": "Cust-7"}


def test_two_deliveries_differing_only_in_id_spelling_are_one_event(spark, storage, tmp_path):
    first = event("1", user_id=GAID, id_type="gaid", alt_ids={"email_sha256": EMAIL})
    again = {**first, "user_id": GAID.lower(), "alt_ids": {"email_sha256": EMAIL.lower()}}
    write_landing(tmp_path, lines(first, again))
    summary = ingest_day(spark, storage, DAY)
    assert (summary.clean_rows, summary.duplicates_dropped, summary.quarantined_rows) == (1, 1, 0)


def test_the_other_spelling_of_a_forgotten_gaid_is_suppressed(spark, storage, tmp_path):
    add_to_list(storage, "request-1", [GAID.lower()])
    write_landing(tmp_path, lines(event("1", user_id=GAID, id_type="gaid"), event("2")))
    summary = ingest_day(spark, storage, DAY)
    assert (summary.suppressed, summary.clean_rows) == (1, 1)


def test_a_quarantined_row_shows_the_id_in_its_one_spelling_and_the_line_as_sent(
    spark, storage, tmp_path
):
    line = json.dumps(event("1", user_id=GAID, id_type="gaid", event_type=""))
    write_landing(tmp_path, [line])
    summary = ingest_day(spark, storage, DAY)
    [row] = pq.read_table(summary.quarantine_uri.removeprefix("file://")).to_pylist()
    assert (row["user_id"], row["raw"]) == (GAID.lower(), line)
