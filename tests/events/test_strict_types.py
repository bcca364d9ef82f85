"""Nothing is coerced: a value of another JSON type than the contract's is quarantined, with the
field named, and the published JSON Schema accepts exactly what ingest accepts."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from test_ingest import DAY, event, lines, write_landing

from profile_store.events.ingest import ingest_day
from profile_store.events.schema import JSON_SCHEMA_FILE, MAP_FIELDS, STRING_FIELDS

WRONG_FOR_STRING = {"true": True, "1.5": 1.5, "7": 7, "{}": {"a": "b"}, "[]": ["a"]}
WRONG_FOR_MAP = {"string": "color=red", "7": 7, "[]": ["color", "red"], "true": True}
WRONG_MAP_VALUE = {"null": None, "7": 7, "true": True, "object": {"a": "b"}, "array": ["a"]}
JSON_TYPES = {True: "boolean", 1.5: "number", 7: "number", None: "null"}


def json_type(value) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    return JSON_TYPES[value]


def quarantine(spark, summary) -> list:
    return spark.read.parquet(summary.quarantine_uri).orderBy("event_id").collect()


@pytest.fixture
def storage(tmp_path):
    from profile_store.lake.storage import LocalLakeStorage

    return LocalLakeStorage(tmp_path)


def test_every_wrong_type_in_every_field_is_quarantined_naming_the_field(spark, storage, tmp_path):
    def case(key: str, name: str, value) -> dict:
        row = event(key)
        row[name] = value
        return row

    cases = {}
    for name in STRING_FIELDS:
        for label, value in WRONG_FOR_STRING.items():
            cases[f"{name}-{label}"] = (case(f"{name}-{label}", name, value), name, value)
    for name in MAP_FIELDS:
        for label, value in WRONG_FOR_MAP.items():
            cases[f"{name}-{label}"] = (case(f"{name}-{label}", name, value), name, value)
        for label, value in WRONG_MAP_VALUE.items():
            row = case(f"{name}-v-{label}", name, {"k": value})
            cases[f"{name}-v-{label}"] = (row, f"{name}.k", value)
    write_landing(tmp_path, [json.dumps(row) for row, _, _ in cases.values()])
    summary = ingest_day(spark, storage, DAY)
    assert summary.clean_rows == 0
    assert summary.quarantined_by_reason == {"wrong_type": len(cases)}
    details = {r.detail for r in quarantine(spark, summary)}
    expected = "{}: expected {}, got {}"
    for _, field, value in cases.values():
        kind = "an object" if field in MAP_FIELDS else "a string"
        assert expected.format(field, kind, json_type(value)) in details


def test_a_boolean_user_id_never_reaches_the_lake_as_the_string_true(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1", user_id=True), event("2")))
    summary = ingest_day(spark, storage, DAY)
    users = [r.user_id for r in spark.read.parquet(summary.events_uri).collect()]
    assert users == ["u-2"]
    [row] = quarantine(spark, summary)
    assert (row.reason, row.event_id, row.user_id) == ("wrong_type", "1", None)
    assert row.detail == "user_id: expected a string, got boolean"


def test_null_optional_fields_and_maps_are_accepted_as_absent(spark, storage, tmp_path):
    nulls = {"member_id": None, "ip": None, "user_agent": None}
    write_landing(tmp_path, lines(event("1", event_attributes=None, alt_ids=None, **nulls)))
    summary = ingest_day(spark, storage, DAY)
    [row] = spark.read.parquet(summary.events_uri).collect()
    assert row.event_attributes == {} and row.alt_ids == {} and row.member_id is None


def test_a_top_level_array_is_one_quarantined_line_not_several_events(spark, storage, tmp_path):
    write_landing(tmp_path, [json.dumps([event("1"), event("2")]), "[]", "12", '"text"'])
    summary = ingest_day(spark, storage, DAY)
    assert summary.received_rows == 4 and summary.clean_rows == 0
    assert summary.quarantined_by_reason == {"not_an_object": 4}
    details = sorted(r.detail for r in quarantine(spark, summary))
    assert details == [
        "expected a JSON object, got array",
        "expected a JSON object, got array",
        "expected a JSON object, got number",
        "expected a JSON object, got string",
    ]


def test_a_field_outside_the_contract_is_quarantined_with_its_name(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1", attributes={"color": "red"})))
    summary = ingest_day(spark, storage, DAY)
    [row] = quarantine(spark, summary)
    assert row.reason == "unknown_field"
    assert row.detail == "attributes: not a field of the event contract"


def test_conflicting_duplicates_are_quarantined_and_the_winner_ignores_file_order(
    spark, storage, tmp_path
):
    early = event("1", event_time="2026-11-01T09:00:00.000Z")
    late = event("1", event_time="2026-11-01T10:00:00.000Z", event_attributes={"color": "blue"})
    winners = []
    for first, second in ((early, late), (late, early)):
        write_landing(tmp_path, lines(first), "part-00000.jsonl.gz")
        write_landing(tmp_path, lines(second, second), "part-00001.jsonl.gz")
        summary = ingest_day(spark, storage, DAY)
        [kept] = spark.read.parquet(summary.events_uri).collect()
        winners.append(str(kept.event_time))
        assert summary.quarantined_by_reason == {"conflicting_duplicate": 1 + (first is early)}
        reasons = {r.reason for r in quarantine(spark, summary)}
        assert reasons == {"conflicting_duplicate"}
    assert winners == ["2026-11-01 09:00:00", "2026-11-01 09:00:00"]


def test_identical_redeliveries_spelt_differently_are_deduplicated_not_conflicting(
    spark, storage, tmp_path
):
    row = event("1", event_attributes={"a": "1", "b": "2"})
    reordered = {key: row[key] for key in reversed(row)}
    reordered["event_attributes"] = {"b": "2", "a": "1"}
    write_landing(
        tmp_path, [json.dumps(row), json.dumps(reordered, indent=None, separators=(",", ":"))]
    )
    summary = ingest_day(spark, storage, DAY)
    assert (summary.clean_rows, summary.duplicates_dropped, summary.quarantined_rows) == (1, 1, 0)


def test_the_published_json_schema_accepts_exactly_what_ingest_accepts(spark, storage, tmp_path):
    validator = Draft202012Validator(json.loads(JSON_SCHEMA_FILE.read_text()))
    candidates = [
        event("ok"),
        event("ok-null", member_id=None, ip=None, event_attributes=None, alt_ids=None),
        event("ok-offset", event_time="2026-11-01T12:00:00+02:00"),
        event("bad-user", user_id=False),
        event("bad-app", app_id=3),
        event("bad-attr", event_attributes={"a": None}),
        event("bad-alt", alt_ids={"email_sha256": {"nested": "x"}}),
        event("bad-extra", extra="x"),
        event("bad-type", id_type="imei"),
        event("bad-blank", user_id="  "),
        event("bad-time", event_time="20261101"),
        event("bad-many", event_attributes={f"k{i}": "v" for i in range(101)}),
        event("bad-long", event_attributes={"k": "v" * 1025}),
        {k: v for k, v in event("bad-missing").items() if k != "event_type"},
    ]
    write_landing(tmp_path, lines(*candidates))
    summary = ingest_day(spark, storage, DAY)
    accepted = {r.event_id for r in spark.read.parquet(summary.events_uri).collect()}
    by_schema = {row["event_id"] for row in candidates if validator.is_valid(row)}
    assert accepted == by_schema == {"ok", "ok-null", "ok-offset"}
