"""Ids whose kind ignores case have one spelling: IDFA upper, GAID and hex digests lower."""

from pyspark.sql import functions as F

from profile_store.events.id_case import (
    normalize_id,
    normalized_alt_ids,
    normalized_user_id,
)


def test_an_idfa_is_spelled_upper_case():
    assert normalize_id("idfa", "6d9f1c2a-ab12-4e0f-9a7b-0c1d2e3f4a5b") == (
        "6D9F1C2A-AB12-4E0F-9A7B-0C1D2E3F4A5B"
    )


def test_a_gaid_is_spelled_lower_case():
    assert normalize_id("gaid", "6D9F1C2A-AB12-4E0F") == "6d9f1c2a-ab12-4e0f"


def test_a_hex_digest_alternate_id_is_spelled_lower_case():
    assert normalize_id("email_sha256", "AB12EF") == "ab12ef"
    assert normalize_id("phone_md5", "AB12EF") == "ab12ef"


def test_cookies_and_logins_keep_their_case():
    assert normalize_id("cookie", "GA1.2.AbC") == "GA1.2.AbC"
    assert normalize_id("member_id", "Login-4711") == "Login-4711"
    assert normalize_id("phone", "ABC") == "ABC"


def test_spark_forms_spell_as_the_python_form(spark):
    rows = [
        ("idfa", "6d9f1c2a-ab12", {"email_sha256": "ABCD", "phone": "Xy"}),
        ("gaid", "6D9F1C2A-AB12", {}),
        ("cookie", "GA1.2.AbC", None),
    ]
    frame = spark.createDataFrame(
        rows, "id_type string, user_id string, alt_ids map<string,string>"
    )
    got = frame.select(
        normalized_user_id(F.col("user_id"), F.col("id_type")).alias("user_id"),
        normalized_alt_ids(F.col("alt_ids")).alias("alt_ids"),
    ).collect()
    for (kind, user_id, alt_ids), row in zip(rows, got, strict=True):
        assert row["user_id"] == normalize_id(kind, user_id)
        expected = None if alt_ids is None else {k: normalize_id(k, v) for k, v in alt_ids.items()}
        assert row["alt_ids"] == expected
