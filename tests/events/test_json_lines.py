"""A line that conforms to the contract is read by Spark's JSON parser instead of one VARIANT
lookup per field: what it yields must be exactly what the VARIANT holds."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import functions as F

from profile_store.events.json_lines import LINE, PARSED, typed_lines
from profile_store.events.schema import MAP_FIELDS, STRING_FIELDS

BASE = {
    "event_id": "e1",
    "app_id": "app",
    "user_id": "u1",
    "id_type": "idfa",
    "event_type": "purchase",
    "event_time": "2026-09-01T10:00:00Z",
}
CONFORMING = [
    json.dumps(BASE),
    json.dumps({**BASE, "event_attributes": {"color": "red", "a.b:c`d": 'x"y\\z'}}),
    json.dumps({**BASE, "user_id": "ünï\u00e7ødé 😀", "alt_ids": {}}),
    json.dumps({**BASE, "member_id": None, "ip": "", "event_attributes": None}),
    json.dumps({**BASE, "event_id": "  padded  ", "alt_ids": {"email": " a@b.c "}}),
    json.dumps({**BASE, "user_agent": "tab\there\nnewline"}, ensure_ascii=True),
    json.dumps(BASE).replace('"user_id"', '"user\\u005fid"'),  # an escaped key
    "  " + json.dumps(BASE) + "  ",
]


@pytest.fixture(scope="module")
def typed(spark):
    lines = spark.createDataFrame([(line,) for line in CONFORMING], [LINE])
    return typed_lines(lines).collect()


def through_variant(spark) -> list:
    lines = spark.createDataFrame([(line,) for line in CONFORMING], [LINE])
    parsed = lines.select(F.parse_json(LINE).alias(PARSED))
    return parsed.select(
        *[F.variant_get(PARSED, f"$['{name}']", "string").alias(name) for name in STRING_FIELDS],
        *[
            F.variant_get(PARSED, f"$['{name}']", "map<string, string>").alias(name)
            for name in MAP_FIELDS
        ],
    ).collect()


def test_the_sample_lines_all_conform(typed) -> None:
    assert [(row.unknown_field_count, row.wrong_type_field) for row in typed] == [(0, None)] * len(
        CONFORMING
    )


def test_every_field_of_a_conforming_line_is_what_its_variant_holds(spark, typed) -> None:
    fields = (*STRING_FIELDS, *MAP_FIELDS)
    expected = [tuple(row[name] for name in fields) for row in through_variant(spark)]
    assert [tuple(row[name] for name in fields) for row in typed] == expected
