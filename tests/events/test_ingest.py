"""Ingesting one landing day: clean rows in, bad rows quarantined with a reason, re-runs exact."""

from __future__ import annotations

import gzip
import json
from datetime import date

import pytest

from profile_store.events.ingest import ingest_day
from profile_store.events.schema import EVENT_COLUMNS
from profile_store.events.validation import ValidationRules
from profile_store.lake.layout import landing_day
from profile_store.lake.storage import LocalLakeStorage

DAY = date(2026, 11, 1)


def event(event_id: str, **overrides) -> dict:
    row = {
        "event_id": event_id,
        "app_id": "com.shop",
        "user_id": f"u-{event_id}",
        "id_type": "cookie",
        "event_time": "2026-11-01T10:00:00.000Z",
        "event_type": "purchase",
        "event_attributes": {"color": "red"},
        "member_id": None,
        "alt_ids": {},
        "ip": "10.0.0.1",
        "user_agent": "ua",
    }
    row.update(overrides)
    return row


def write_landing(root, lines: list[str], name: str = "part-00000.jsonl.gz") -> None:
    path = root / landing_day(DAY) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as out:
        out.write("\n".join(lines) + "\n")


def lines(*rows: dict) -> list[str]:
    return [json.dumps(r) for r in rows]


BAD_ROWS = {
    "malformed_record": '{"event_id": "m1", "app_id": ',
    "not_an_object": json.dumps([event("n1"), event("n2")]),
    "unknown_field": json.dumps(event("x1", sdk_version="4.2")),
    "wrong_type": json.dumps(event("w1", event_attributes=["not", "a", "map"])),
    "missing_event_id": json.dumps(event("")),
    "missing_app_id": json.dumps(event("a1", app_id=None)),
    "missing_user_id": json.dumps({k: v for k, v in event("u1").items() if k != "user_id"}),
    "invalid_id_type": json.dumps(event("i1", id_type="imei")),
    "empty_event_type": json.dumps(event("e1", event_type="")),
    "unparseable_event_time": json.dumps(event("t1", event_time="yesterday")),
    "event_time_outside_day": json.dumps(event("t2", event_time="2026-11-02T00:00:00.000Z")),
    "oversized_attributes": json.dumps(
        event("o1", event_attributes={f"k{i}": "v" for i in range(101)})
    ),
}


@pytest.fixture
def storage(tmp_path):
    return LocalLakeStorage(tmp_path)


def test_clean_rows_land_in_the_day_partition(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1"), event("2")))
    summary = ingest_day(spark, storage, DAY)
    rows = spark.read.parquet(summary.events_uri).orderBy("event_id").collect()
    assert [r.event_id for r in rows] == ["1", "2"]
    assert rows[0].event_attributes == {"color": "red"}
    assert summary.clean_rows == 2 and summary.quarantined_rows == 0


def test_every_bad_row_is_quarantined_with_its_reason(spark, storage, tmp_path):
    write_landing(tmp_path, [*BAD_ROWS.values(), json.dumps(event("good"))])
    summary = ingest_day(spark, storage, DAY)
    assert summary.quarantined_by_reason == {reason: 1 for reason in BAD_ROWS}
    quarantined = spark.read.parquet(summary.quarantine_uri).collect()
    assert sorted(r.reason for r in quarantined) == sorted(BAD_ROWS)
    assert all(r.raw for r in quarantined)
    assert summary.clean_rows == 1


def test_a_day_of_rejected_lines_only_counts_each_reason(spark, storage, tmp_path):
    write_landing(tmp_path, list(BAD_ROWS.values()))
    summary = ingest_day(spark, storage, DAY)
    assert summary.quarantined_by_reason == {reason: 1 for reason in BAD_ROWS}
    assert (summary.clean_rows, summary.apps, summary.min_event_time) == (0, [], None)


def test_the_days_apps_and_time_span_are_its_accepted_events(spark, storage, tmp_path):
    write_landing(
        tmp_path,
        lines(
            event("1", app_id="com.b", event_time="2026-11-01T09:00:00.000Z"),
            event("2", app_id="com.a", event_time="2026-11-01T17:30:00.000Z"),
            event("2", app_id="com.conflicting", event_time="2026-11-01T18:00:00.000Z"),
            event("3", app_id="com.late", event_time="2026-11-02T01:00:00.000Z"),
        ),
    )
    summary = ingest_day(spark, storage, DAY)
    assert summary.apps == ["com.a", "com.b"]
    assert (str(summary.min_event_time), str(summary.max_event_time)) == (
        "2026-11-01 09:00:00",
        "2026-11-01 17:30:00",
    )
    assert summary.quarantined_by_reason == {
        "conflicting_duplicate": 1,
        "event_time_outside_day": 1,
    }


def test_the_days_figures_are_counted_when_spark_drops_their_observation(
    spark, storage, tmp_path, monkeypatch
):
    write_landing(tmp_path, [*BAD_ROWS.values(), *lines(event("1"), event("1"), event("2"))])
    observed = ingest_day(spark, storage, DAY)
    monkeypatch.setattr("profile_store.events.ingest.observed_metrics", lambda observation: None)
    assert ingest_day(spark, storage, DAY) == observed


def test_received_rows_equal_clean_plus_quarantined_plus_duplicates(spark, storage, tmp_path):
    write_landing(tmp_path, [*BAD_ROWS.values(), *lines(event("1"), event("1"), event("2"))])
    s = ingest_day(spark, storage, DAY)
    assert s.received_rows == s.clean_rows + s.quarantined_rows + s.duplicates_dropped
    assert s.duplicates_dropped == 1


def test_duplicate_event_ids_across_files_keep_one_row(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1")), "part-00000.jsonl.gz")
    write_landing(tmp_path, lines(event("1"), event("2")), "part-00001.jsonl.gz")
    summary = ingest_day(spark, storage, DAY)
    assert summary.clean_rows == 2
    assert summary.duplicates_dropped == 1


def test_rematerializing_a_day_replaces_it_exactly(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1"), event("2"), event("3")))
    ingest_day(spark, storage, DAY)
    write_landing(tmp_path, lines(event("1"), event("4")))
    summary = ingest_day(spark, storage, DAY)
    ids = sorted(r.event_id for r in spark.read.parquet(summary.events_uri).collect())
    assert ids == ["1", "4"]


def test_time_with_offset_and_without_millis_is_accepted(spark, storage, tmp_path):
    write_landing(
        tmp_path,
        lines(
            event("1", event_time="2026-11-01T10:00:00Z"),
            event("2", event_time="2026-11-01T12:00:00.000+02:00"),
        ),
    )
    summary = ingest_day(spark, storage, DAY)
    assert summary.clean_rows == 2
    assert str(summary.min_event_time) == "2026-11-01 10:00:00"


def test_a_day_without_landing_files_is_an_empty_day(spark, storage):
    summary = ingest_day(spark, storage, DAY)
    assert (summary.landing_files, summary.received_rows, summary.clean_rows) == (0, 0, 0)
    assert spark.read.parquet(summary.events_uri).count() == 0
    assert spark.read.parquet(summary.quarantine_uri).count() == 0


def test_a_day_with_only_its_success_marker_is_an_empty_day(spark, storage, tmp_path):
    (tmp_path / landing_day(DAY)).mkdir(parents=True)
    (tmp_path / landing_day(DAY) / "_SUCCESS").write_text("")
    summary = ingest_day(spark, storage, DAY)
    assert (summary.landing_files, summary.clean_rows) == (0, 0)
    assert tuple(spark.read.parquet(summary.events_uri).columns) == EVENT_COLUMNS


def test_files_of_no_bytes_are_an_empty_day_with_nothing_quarantined(spark, storage, tmp_path):
    directory = tmp_path / landing_day(DAY)
    directory.mkdir(parents=True)
    (directory / "part-00000.jsonl.gz").write_bytes(b"")
    (directory / "part-00001.jsonl").write_bytes(b"")
    summary = ingest_day(spark, storage, DAY)
    assert (summary.landing_files, summary.received_rows, summary.unreadable_files) == (2, 0, [])
    assert spark.read.parquet(summary.quarantine_uri).count() == 0


def test_markers_are_not_read_as_data(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1")))
    (tmp_path / landing_day(DAY) / "_SUCCESS").write_text("")
    assert ingest_day(spark, storage, DAY).clean_rows == 1


def test_attribute_limits_are_configurable(spark, storage, tmp_path):
    write_landing(tmp_path, lines(event("1", event_attributes={"a": "1", "b": "2", "c": "3"})))
    summary = ingest_day(spark, storage, DAY, ValidationRules(max_attributes=2))
    assert summary.quarantined_by_reason == {"oversized_attributes": 1}


def test_invalid_rules_are_rejected_with_the_field_name():
    with pytest.raises(ValueError, match="max_attributes"):
        ValidationRules(max_attributes=0)


def test_a_line_that_is_not_utf8_is_quarantined_readable_by_any_parquet_reader(
    spark, storage, tmp_path
):
    import pyarrow.parquet as pq

    not_utf8 = json.dumps(event("n1")).encode().replace(b'"u-n1"', b'"u-\xff\xfe"')
    garbage = b"\xff\xfe\xfd garbage"
    path = tmp_path / landing_day(DAY) / "part-00000.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    good = json.dumps(event("1")).encode()
    path.write_bytes(gzip.compress(b"\n".join([good, not_utf8, garbage]) + b"\n"))
    summary = ingest_day(spark, storage, DAY)
    assert summary.clean_rows == 1 and summary.quarantined_by_reason == {"malformed_record": 2}
    records = pq.read_table(summary.quarantine_uri.removeprefix("file://")).to_pylist()
    assert sorted(r["raw_bytes"] for r in records) == sorted([not_utf8, garbage])
    assert all("\ufffd" in r["raw"] for r in records)
