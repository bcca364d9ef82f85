"""Pair rows: two-attribute leaves in one multi-get, with the same answer as the scan."""

from __future__ import annotations

import contextlib
from datetime import date
from itertools import combinations

import happybase
import pytest
from pyspark.sql import functions as F

from profile_store.audiences.attribute_stats import TrimRule, daily_attribute_stats, trim_decisions
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.rowkey import built_day_rowkey, pair_marker_rowkey, pair_rowkey
from profile_store.audiences.sketch_rows import day_sketch_rows
from profile_store.audiences.sketch_table import BUILT, ensure_table, write_rows

SCHEMA = "app_id string, event_type string, user_id string, event_attributes map<string,string>"
DAY = date(2026, 11, 1)
COLORS, SIZES, PLANS = ("red", "blue"), ("S", "M", "L"), ("a", "b")


def attributes(i: int) -> dict[str, str]:
    # Sizes follow colors partly: red never comes in L, so (red, L) is a pair never seen.
    color = COLORS[i % 2]
    size = SIZES[(i // 2) % 2] if color == "red" else SIZES[(i // 3) % 3]
    return {"color": color, "size": size, "plan": PLANS[(i // 5) % 2]}


EVENTS = [("shop", "buy", f"u{i % 90}", attributes(i)) for i in range(400)]


def exact_users(filters: dict[str, str]) -> int:
    return len({u for _, _, u, a in EVENTS if all(a[k] == v for k, v in filters.items())})


@pytest.fixture(scope="module")
def rows_by_limit(spark):
    """The day's sketch rows with the default pair limit, and with a limit of 4 value pairs."""
    events = spark.createDataFrame(EVENTS, SCHEMA)
    stats = daily_attribute_stats(events).withColumn("date", F.lit(DAY.isoformat()))
    decisions = trim_decisions(stats, TrimRule(), days_in_window=1)
    built = {}
    for limit in (2_000, 4):
        rows = day_sketch_rows(events, decisions, "20261101", max_pair_rows=limit).collect()
        built[limit] = [row.asDict(recursive=True) for row in rows]
    return built


def test_every_two_kept_values_seen_on_one_event_get_a_pair_row(rows_by_limit):
    keys = {row["rowkey"].encode() for row in rows_by_limit[2_000] if row["row_kind"] == "pair"}
    seen = {
        pair_rowkey("shop", "buy", DAY, {a: attrs[a], b: attrs[b]})
        for _, _, _, attrs in EVENTS
        for a, b in combinations(sorted(attrs), 2)
    }
    assert keys == seen
    assert pair_rowkey("shop", "buy", DAY, {"color": "red", "size": "L"}) not in keys


def test_every_two_kept_attributes_get_a_pair_marker(rows_by_limit):
    markers = {r["rowkey"].encode() for r in rows_by_limit[2_000] if r["row_kind"] == "pair_marker"}
    assert markers == {
        pair_marker_rowkey("shop", "buy", DAY, names)
        for names in (("color", "plan"), ("color", "size"), ("plan", "size"))
    }


def test_an_attribute_pair_over_the_limit_gets_neither_rows_nor_marker(rows_by_limit):
    limited = rows_by_limit[4]
    pairs = {
        (r["attribute"], r["attribute2"])
        for r in limited
        if r["row_kind"] in ("pair", "pair_marker")
    }
    # color x size has 5 value pairs, plan x size 6: only color x plan (4) stays.
    assert pairs == {("color", "plan")}


@pytest.fixture(scope="module")
def tables(sketch_gateway, rows_by_limit):
    """Both layouts in the gateway, each day built; yields an engine factory."""
    connection = happybase.Connection(**sketch_gateway.connection_kwargs())
    for limit, rows in rows_by_limit.items():
        name = f"sketches_pairs_{limit}"
        ensure_table(connection, name)
        write_rows(connection.table(name), rows)
        connection.table(name).put(built_day_rowkey(DAY), {BUILT: b"1"})
    yield connection
    connection.close()


def engine_on(connection, limit: int) -> tuple[AudienceEngine, list[str]]:
    calls: list[str] = []
    table = connection.table(f"sketches_pairs_{limit}")

    class Counting:
        def rows(self, *args, **kwargs):
            calls.append("rows")
            return table.rows(*args, **kwargs)

        def scan(self, *args, **kwargs):
            calls.append("scan")
            return table.scan(*args, **kwargs)

    @contextlib.contextmanager
    def open_table():
        yield Counting()

    return AudienceEngine(open_table), calls


def leaf(filters: dict[str, str], **extra) -> dict:
    return {
        "app_id": "shop",
        "event_type": "buy",
        "date_from": DAY.isoformat(),
        "date_to": DAY.isoformat(),
        "attributes": filters,
        **extra,
    }


@pytest.mark.parametrize(
    "filters",
    [{"color": "red", "size": "M"}, {"plan": "b", "color": "blue"}, {"size": "S", "plan": "a"}],
)
def test_a_two_attribute_leaf_is_one_multi_get_with_the_exact_answer(tables, filters):
    engine, calls = engine_on(tables, 2_000)
    answer = engine.estimate(leaf(filters))
    assert (answer.estimate, answer.exact) == (exact_users(filters), True)
    assert calls == ["rows"]
    assert answer.rows_read == 2  # the marker and the pair row


def test_two_values_never_seen_on_one_event_count_zero_from_the_marker_alone(tables):
    engine, calls = engine_on(tables, 2_000)
    assert engine.estimate(leaf({"color": "red", "size": "L"})).estimate == 0
    assert calls == ["rows"]


def test_min_count_on_a_two_attribute_leaf_sums_the_pair_counts(tables):
    engine, _ = engine_on(tables, 2_000)
    filters = {"color": "red", "plan": "a"}
    per_user: dict[str, int] = {}
    for _, _, user, attrs in EVENTS:
        if attrs["color"] == "red" and attrs["plan"] == "a":
            per_user[user] = per_user.get(user, 0) + 1
    expected = sum(1 for count in per_user.values() if count >= 2)
    assert engine.estimate(leaf(filters, min_count=2)).estimate == expected


def test_an_attribute_pair_without_pair_rows_is_answered_by_the_scan_alike(tables):
    engine, calls = engine_on(tables, 4)
    filters = {"color": "red", "size": "M"}
    assert engine.estimate(leaf(filters)).estimate == exact_users(filters)
    assert calls == ["rows", "scan"]
