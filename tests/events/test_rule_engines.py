"""The rule table's two engines agree: ingest's Spark and the collector's Arrow give every line
the same reason (or none), and the collector's event time is Spark's."""

from __future__ import annotations

import json
from datetime import date

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from profile_store.events.arrow_rules import event_times, reasons
from profile_store.events.json_lines import LINE
from profile_store.events.parsed_lines import parse_lines
from profile_store.events.rules import REASONS, RULES, ValidationRules
from profile_store.events.validation import check_lines, parse_event_time

VALID = {
    "event_id": "e1",
    "app_id": "com.shop",
    "user_id": "u1",
    "id_type": "cookie",
    "event_time": "2026-11-01T20:15:03.250Z",
    "event_type": "open",
}


def event(**changes: object) -> bytes:
    body = {**VALID, **changes}
    return json.dumps({k: v for k, v in body.items() if v is not ...}).encode()


TIMES = [
    "2026-11-01T20:15:03.250Z",
    "2026-11-01T20:15:03Z",
    "2026-11-01T20:15:03.5Z",
    "2026-11-01T20:15:03.25Z",
    "2026-11-01T20:15:03.2500Z",
    "2026-11-01T20:15:03+01:00",
    "2026-11-01T20:15:03-00:00",
    "2026-11-01T20:15:03+18:00",
    "2026-11-01T20:15:03+18:30",
    "2026-11-01T20:15:03+19:00",
    "2026-11-01T20:15:03+01:60",
    "2026-02-30T20:15:03Z",
    "2026-13-01T20:15:03Z",
    "2026-11-01T24:00:00Z",
    "2026-11-01T23:59:60Z",
    "2026-11-01T20:15Z",
    "2026-11-01 20:15:03Z",
    "2026-11-01t20:15:03z",
    "2026-11-01T20:15:03+0100",
    "2026-11-01T20:15:03+01",
    "0000-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z",
    "+2026-11-01T20:15:03Z",
    " 2026-11-01T20:15:03Z",
    "2024-02-29T00:00:00Z",
    "2023-02-29T00:00:00Z",
    "2026-11-01T20:15:03.250+05:30",
    "2026-11-01T20:15:03,250Z",
    "２０２６-11-01T20:15:03Z",
    "2026-11-01T20:15:03.Z",
    "2026-11-01T20:15:03UTC",
    "",
]

LINES = [
    event(),
    b"not json",
    b'{"event_id": "e1", "event_id": "e2"}',
    b"null",
    b"[1, 2]",
    b'"text"',
    b"NaN",
    b'{"event_id": NaN}',
    b'{"event_id": "\\ud800"}',
    b'{"event_id": "\\ud83d\\ude00", "app_id": "a"}',
    b'{"event_id": "a\tb"}',
    b"\xef\xbb\xbf" + event(),
    b'{"event_id": "\xff"}',
    event(color="red"),
    event(user_id=True),
    event(user_id=7),
    event(event_attributes={"a": 1}),
    event(event_attributes=["a"]),
    event(alt_ids={"email_sha256": None}),
    event(member_id=None, ip=None, event_attributes=None),
    event(event_id=...),
    event(event_id="   "),
    event(event_id="\t"),
    event(app_id=""),
    event(user_id=None),
    event(id_type="IDFA"),
    event(id_type=...),
    event(event_type=" "),
    event(event_time=...),
    event(event_attributes={f"k{i}": "v" for i in range(101)}),
    event(event_attributes={f"k{i}": "v" for i in range(100)}),
    event(event_attributes={"a": "x" * 1025}),
    event(event_attributes={"a": "é" * 1024}),
    event(event_attributes={"a": "x", "b": "y" * 1025}),
    event(event_id="", user_id=True),
    *(event(event_time=time) for time in TIMES),
]


@pytest.fixture(scope="module")
def spark_reasons(spark) -> list[str | None]:
    frame = spark.createDataFrame([(line,) for line in LINES], f"{LINE} binary").select(
        F.col(LINE).cast("string").alias(LINE)
    )
    checked = check_lines(frame, None, ValidationRules()).select("reason").collect()
    return [row["reason"] for row in checked]


def test_the_collector_gives_every_line_ingests_reason(spark_reasons):
    parsed = parse_lines(LINES)
    collector = reasons(parsed.columns, None, ValidationRules()).to_pylist()
    differing = [
        (line[:80], ingest, ours)
        for line, ingest, ours in zip(LINES, spark_reasons, collector, strict=True)
        if ingest != ours
    ]
    assert differing == []
    assert set(spark_reasons) >= {rule.reason for rule in RULES} - {"event_time_outside_day"}


def test_text_after_the_json_value_is_refused_by_the_collector_only(spark):
    line = event() + b" junk"
    frame = spark.createDataFrame([(line.decode(),)], f"{LINE} string")
    assert check_lines(frame, None, ValidationRules()).select("reason").first()[0] is None
    parsed = parse_lines([line])
    assert reasons(parsed.columns, None, ValidationRules()).to_pylist() == ["malformed_record"]


def test_the_collector_reads_the_time_as_spark_does(spark):
    frame = spark.createDataFrame([(t,) for t in TIMES], "t string")
    ingest = [row[0] for row in frame.select(F.unix_millis(parse_event_time(F.col("t")))).collect()]
    ours = event_times(pa.array(TIMES)).cast(pa.int64()).to_pylist()
    assert list(zip(TIMES, ours, strict=True)) == list(zip(TIMES, ingest, strict=True))


def test_a_day_bound_is_applied_by_both_engines(spark):
    lines = [event(event_time="2026-11-01T23:59:59Z"), event(event_time="2026-11-02T00:00:00Z")]
    frame = spark.createDataFrame([(line.decode(),) for line in lines], f"{LINE} string")
    ingest = [
        r["reason"] for r in check_lines(frame, date(2026, 11, 1), ValidationRules()).collect()
    ]
    ours = reasons(parse_lines(lines).columns, date(2026, 11, 1), ValidationRules()).to_pylist()
    assert ingest == ours == [None, "event_time_outside_day"]


def test_the_reason_names_are_the_quarantines():
    assert REASONS[: len(RULES)] == tuple(rule.reason for rule in RULES)
    assert REASONS[-1] == "conflicting_duplicate"
