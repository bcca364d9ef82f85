"""Attribute trimming and the day's sketch rows, computed in Spark."""

from __future__ import annotations

import json
from datetime import date

import pytest
from datasketches import compact_theta_sketch
from pyspark.sql import functions as F

from profile_store.audiences.attribute_stats import (
    ATTRIBUTE_STATS_SCHEMA,
    TRIM_DECISIONS_SCHEMA,
    TrimRule,
    daily_attribute_stats,
    trim_decisions,
)
from profile_store.audiences.rowkey import AGGREGATE_HASH, kept_marker_rowkey, marginal_rowkey
from profile_store.audiences.sketch_rows import day_sketch_rows
from profile_store.audiences.tuple_serde import load_counts_sketch

SCHEMA = "app_id string, event_type string, user_id string, event_attributes map<string,string>"


@pytest.fixture
def events(spark):
    rows = [
        ("shop", "buy", f"u{i % 40}", {"color": ("red", "blue")[i % 2], "order_id": f"o{i}"})
        for i in range(800)
    ]
    rows += [("shop", "view", f"u{i}", {}) for i in range(10)]
    return spark.createDataFrame(rows, SCHEMA)


def decisions(events, date="2026-11-01"):
    stats = daily_attribute_stats(events).withColumn("date", F.lit(date))
    return trim_decisions(stats, TrimRule(), days_in_window=1)


def test_low_cardinality_attributes_are_kept_and_noisy_ones_trimmed(events):
    kept = {r.attribute: r.kept for r in decisions(events).collect() if r.attribute}
    assert kept == {"color": True, "order_id": False}


def test_event_types_without_attributes_are_listed_but_never_kept(events):
    view = [r for r in decisions(events).collect() if r.event_type == "view"]
    assert [(r.attribute, r.kept, r.appearances) for r in view] == [(None, False, 10)]


def test_distinct_ratio_rule_trims_rarely_repeated_values(spark):
    rows = [("a", "e", "u", {"x": str(i % 30)}) for i in range(100)]
    df = spark.createDataFrame(rows, SCHEMA)
    assert decisions(df).first().kept is False  # 30 distinct in 100: ratio 0.3 >= 0.1


def test_a_few_valued_attribute_of_a_small_app_is_kept_whatever_its_ratio(spark):
    rows = [("small", "e", f"u{i}", {"plan": f"p{i % 10}"}) for i in range(40)]
    df = spark.createDataFrame(rows, SCHEMA)
    decision = decisions(df).first()
    assert (decision.distinct_values, decision.appearances) == (10, 40)  # ratio 0.25
    assert decision.kept is True


def test_window_merges_days_before_deciding(spark):
    day1 = spark.createDataFrame([("a", "e", "u", {"x": str(i % 60)}) for i in range(600)], SCHEMA)
    day2 = spark.createDataFrame(
        [("a", "e", "u", {"x": str(60 + i % 60)}) for i in range(600)], SCHEMA
    )
    stats = (
        daily_attribute_stats(day1)
        .withColumn("date", F.lit("2026-11-01"))
        .unionByName(daily_attribute_stats(day2).withColumn("date", F.lit("2026-11-02")))
    )
    merged = trim_decisions(stats, TrimRule(), days_in_window=2).first()
    assert merged.distinct_values == pytest.approx(120, abs=1)
    assert merged.appearances == 1200 and merged.days_seen == 2
    assert merged.kept is False  # 120 distinct over the window > 100


def columns(schema) -> list[tuple[str, str]]:
    return [(field.name, field.dataType.simpleString()) for field in schema.fields]


def test_the_stats_are_read_back_with_the_schema_they_are_written_with(events, tmp_path):
    daily_attribute_stats(events).write.parquet(str(tmp_path / "stats"))
    written = events.sparkSession.read.parquet(str(tmp_path / "stats")).schema
    assert columns(ATTRIBUTE_STATS_SCHEMA) == columns(written)


def test_the_decisions_are_read_back_with_the_schema_they_are_written_with(events, tmp_path):
    decisions(events).write.parquet(str(tmp_path / "decisions"))
    written = events.sparkSession.read.parquet(str(tmp_path / "decisions")).schema
    assert columns(TRIM_DECISIONS_SCHEMA) == columns(written)


def test_one_row_per_kept_combination_plus_one_aggregate(events):
    rows = day_sketch_rows(events, decisions(events), "20261101").collect()
    buy = sorted(
        (r for r in rows if r.event_type == "buy" and r.attr_hash is not None),
        key=lambda r: r.attr_hash,
    )
    assert [r.attr_hash == AGGREGATE_HASH for r in buy] == [True, False, False]
    assert sorted(tuple(c.asDict().values()) for r in buy[1:] for c in r.combination) == [
        ("color", "blue"),
        ("color", "red"),
    ]
    assert all(r.rowkey.startswith("shop|buy|20261101|") for r in buy)


def test_theta_sketches_count_unique_users_and_the_aggregate_unions_them(events):
    rows = {r.rowkey: r for r in day_sketch_rows(events, decisions(events), "20261101").collect()}
    aggregate = rows[f"shop|buy|20261101|{AGGREGATE_HASH}"]
    assert compact_theta_sketch.deserialize(bytes(aggregate.theta)).get_estimate() == 40
    assert aggregate.events == 800
    per_combination = [
        compact_theta_sketch.deserialize(bytes(r.theta)).get_estimate()
        for r in rows.values()
        if r.event_type == "buy" and r.row_kind == "combination"
    ]
    assert per_combination == [20, 20]


def test_tuple_sketch_sums_events_per_user(events):
    rows = day_sketch_rows(events, decisions(events), "20261101").collect()
    aggregate = next(r for r in rows if r.event_type == "buy" and r.attr_hash == AGGREGATE_HASH)
    counts = [value for _, value in load_counts_sketch(aggregate.counts)]
    assert counts == [20] * 40


def test_events_without_kept_attributes_form_their_own_combination(events):
    rows = [r for r in day_sketch_rows(events, decisions(events), "20261101").collect()]
    view = [r for r in rows if r.event_type == "view"]
    assert len(view) == 2  # the empty combination and the aggregate; no marginals
    assert {r.attr_hash == AGGREGATE_HASH for r in view} == {True, False}


def test_invalid_trim_rules_name_the_field():
    with pytest.raises(ValueError, match="max_distinct_ratio"):
        TrimRule(max_distinct_ratio=0)


def test_a_window_pair_without_events_today_gets_an_empty_aggregate_row(spark, events):
    today = events.where("event_type = 'buy'")
    rows = day_sketch_rows(today, decisions(events), "20261102").collect()
    view = [r for r in rows if r.event_type == "view"]
    assert len(view) == 1 and view[0].attr_hash == AGGREGATE_HASH
    assert view[0].events == 0 and view[0].kept_attributes == []
    assert compact_theta_sketch.deserialize(bytes(view[0].theta)).is_empty()


def test_aggregate_rows_carry_the_kept_attribute_list(events):
    rows = day_sketch_rows(events, decisions(events), "20261101").collect()
    kept = {r.event_type: r.kept_attributes for r in rows if r.attr_hash == AGGREGATE_HASH}
    assert kept == {"buy": ["color"], "view": []}
    assert all(r.kept_attributes is None for r in rows if r.attr_hash != AGGREGATE_HASH)


def test_a_trimmed_attribute_carries_the_limit_it_crossed(spark):
    many = [("a", "e", "u", {"id": str(i)}) for i in range(300)]  # 300 values > 100
    id_like = [("b", "e", "u", {"x": str(i % 30)}) for i in range(100)]  # 30 in 100: 0.3
    reasons = {
        r.app_id: r.trim_reason
        for r in decisions(spark.createDataFrame(many + id_like, SCHEMA)).collect()
    }
    assert reasons == {"a": "too_many_values", "b": "values_too_distinct"}


def test_a_kept_attribute_has_no_trim_reason(events):
    kept = [r for r in decisions(events).collect() if r.attribute == "color"]
    assert kept[0].kept and kept[0].trim_reason is None


def test_aggregate_rows_carry_each_trimmed_attribute_with_its_figures(events):
    rows = day_sketch_rows(events, decisions(events), "20261101").collect()
    trimmed = {
        r.event_type: json.loads(r.trimmed_attributes)
        for r in rows
        if r.attr_hash == AGGREGATE_HASH
    }
    assert trimmed["view"] == {}
    assert trimmed["buy"] == {
        "order_id": {
            "reason": "too_many_values",
            "distinct_values": 800,
            "appearances": 800,
            "window_days": 1,
            "max_distinct": 100,
            "max_distinct_ratio": 0.1,
            "few_values": 20,
        }
    }


def test_each_kept_value_gets_a_marginal_row_unioning_its_combinations(spark):
    rows = [
        ("shop", "buy", f"u{i % 30}", {"color": ("red", "blue")[i % 2], "size": "SML"[i % 3]})
        for i in range(600)
    ]
    events = spark.createDataFrame(rows, SCHEMA)
    out = day_sketch_rows(events, decisions(events), "20261101").collect()
    marginals = {(r.attribute, r.value): r for r in out if r.row_kind == "marginal"}
    assert sorted(marginals) == [
        ("color", "blue"),
        ("color", "red"),
        ("size", "L"),
        ("size", "M"),
        ("size", "S"),
    ]
    red = marginals[("color", "red")]
    assert red.rowkey == "shop|buy|20261101|~|color|red"
    assert compact_theta_sketch.deserialize(bytes(red.theta)).get_estimate() == 15
    assert red.events == 300
    assert sorted(v for _, v in load_counts_sketch(red.counts)) == [20] * 15
    combinations = [r for r in out if r.row_kind == "combination"]
    assert len(combinations) == 6  # every (color, size) pair: the marginals union 3 or 2 each


def test_each_kept_attribute_gets_a_marker_row(events):
    out = day_sketch_rows(events, decisions(events), "20261101").collect()
    markers = [(r.rowkey, r.attribute) for r in out if r.row_kind == "kept_marker"]
    assert markers == [("shop|buy|20261101|~|color", "color")]


def test_marginal_keys_escape_separators_in_names_and_values(spark):
    rows = [("a|b", "e", f"u{i}", {"x|y": "1|2"}) for i in range(40)]
    events = spark.createDataFrame(rows, SCHEMA)
    out = day_sketch_rows(events, decisions(events), "20261101").collect()
    keys = sorted(r.rowkey for r in out if r.row_kind in ("marginal", "kept_marker"))
    day = date(2026, 11, 1)
    assert keys == ["a%7Cb|e|20261101|~|x%7Cy", "a%7Cb|e|20261101|~|x%7Cy|1%7C2"]
    assert [key.encode() for key in keys] == [
        kept_marker_rowkey("a|b", "e", day, "x|y"),
        marginal_rowkey("a|b", "e", day, "x|y", "1|2"),
    ]


def test_a_combination_holds_the_events_kept_entries_sorted_by_name_and_hashed(spark):
    rows = [
        ("shop", "buy", f"u{i % 30}", {"size": "SM"[i % 2], "color": "red", "sku": f"s{i}"})
        for i in range(600)
    ]
    rows += [("shop", "buy", f"u{i}", {"size": "S"}) for i in range(30)]  # color missing
    events = spark.createDataFrame(rows, SCHEMA)
    out = day_sketch_rows(events, decisions(events), "20261101")
    combinations = (
        out.where("row_kind = 'combination'")
        .select(
            "combination",
            "attr_hash",
            F.lpad(
                F.lower(
                    F.hex(
                        F.xxhash64(F.array_sort(F.map_entries(F.map_from_entries("combination"))))
                    )
                ),
                16,
                "0",
            ).alias("expected_hash"),
        )
        .collect()
    )
    got = sorted(tuple((e.key, e.value) for e in r.combination) for r in combinations)
    assert got == [
        (("color", "red"), ("size", "M")),
        (("color", "red"), ("size", "S")),
        (("size", "S"),),
    ]
    assert all(r.attr_hash == r.expected_hash for r in combinations)
