"""The landing day of each message: the UTC day of its event time as ingest reads it, else the
day it reached Kafka; and one landing line per message."""

from __future__ import annotations

import json
from datetime import date

import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as F

from profile_store.events.validation import parse_event_time
from profile_store.realtime.event_days import day_text, event_days, landing_lines

ARRIVAL_MS = 1_795_000_000_000  # 2026-11-18T...Z
ARRIVAL_DAY = "2026-11-18"


def days_of(*values: bytes) -> list[str]:
    array = pa.array(list(values), pa.binary())
    return [day_text(d) for d in event_days(array, np.full(len(values), ARRIVAL_MS))]


def test_an_event_lands_in_the_utc_day_of_its_zone_offset():
    assert days_of(
        b'{"event_time":"2026-11-01T23:15:03.250-01:00"}',
        b'{"event_time":"2026-11-02T00:15:03+01:00"}',
        b'{"event_time" : "2026-11-05T10:00:00Z","event_id":"x"}',
    ) == ["2026-11-02", "2026-11-01", "2026-11-05"]


def test_an_attribute_named_event_time_does_not_decide_the_day():
    line = (
        b'{"event_attributes":{"event_time":"2020-01-01T00:00:00Z"},'
        b'"event_time":"2026-11-03T10:00:00Z"}'
    )
    assert days_of(line) == ["2026-11-03"]


def test_an_escaped_time_is_read_as_a_json_parser_reads_it():
    assert days_of(b'{"event_time":"2026-11-01T10:00:00\\u005a"}') == ["2026-11-01"]


@pytest.mark.parametrize(
    "line",
    [
        b"not json",
        b'{"event_time":1795000000}',
        b'{"event_id":"no time"}',
        b'{"event_time":"yesterday"}',
        b'{"event_time":"2026-11-31T25:61:00.000Z"}',
        b'{"event_time":"2026-11-01T10:00:00"}',  # no zone
        b"\xff\xfe\x00",
        b"",
    ],
    ids=["not-json", "a-number", "missing", "words", "impossible", "no-zone", "not-utf8", "empty"],
)
def test_a_message_without_a_readable_time_lands_in_the_day_it_reached_kafka(line):
    assert days_of(line) == [ARRIVAL_DAY]


def test_a_line_break_inside_a_message_becomes_a_tab_and_the_event_stays_the_same():
    pretty = json.dumps({"event_id": "e1", "event_time": "2026-11-01T10:00:00Z"}, indent=2)
    broken_string = b'{"event_id":"e\n1"}'  # a raw line break inside a string: invalid JSON
    lines = landing_lines(pa.array([pretty.encode(), broken_string], pa.binary())).to_pylist()

    assert all(b"\n" not in line and b"\r" not in line for line in lines)
    assert json.loads(lines[0]) == json.loads(pretty)
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[1])


def test_every_time_ingest_accepts_lands_in_the_day_ingest_checks_it_against(spark):
    times = [
        "2026-11-01T20:15:03.250Z",
        "2026-11-01T21:15:03+01:00",
        "2026-11-01T00:30:00+14:00",
        "2026-11-01T23:59:59.999-12:00",
        "2026-11-01T23:59:59Z",
        "2026-11-02T00:00:00.000Z",
        "2026-11-01T10:00:00.5Z",
        "2026-02-29T10:00:00Z",
        "2028-02-29T10:00:00Z",
        "2026-11-01T10:00:00+0100",
        "2026-11-01T10:00:00.1234Z",
        "2026-11-01 10:00:00Z",
    ]
    parsed = (
        spark.createDataFrame([(t,) for t in times], "event_time string")
        .select("event_time", F.to_date(parse_event_time(F.col("event_time"))).alias("day"))
        .collect()
    )
    accepted = {row.event_time: row.day for row in parsed if row.day is not None}
    assert len(accepted) >= 6  # the contract's forms, at least
    lines = [json.dumps({"event_time": t}).encode() for t in accepted]
    assert days_of(*lines) == [day.isoformat() for day in accepted.values()]
    assert all(isinstance(day, date) for day in accepted.values())
