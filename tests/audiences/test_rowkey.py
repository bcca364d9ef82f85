"""Sketch row keys: readable, collision-free across names containing the separator."""

from __future__ import annotations

from datetime import date

import pytest

from profile_store.audiences.rowkey import (
    AGGREGATE_HASH,
    aggregate_rowkey,
    leaf_scan_range,
    parse_rowkey,
    sketch_rowkey,
)

DAY = date(2026, 11, 1)


def test_key_reads_app_event_day_hash():
    assert sketch_rowkey("com.shop", "purchase", DAY, "00ff00ff00ff00ff") == (
        b"com.shop|purchase|20261101|00ff00ff00ff00ff"
    )


def test_separator_inside_names_cannot_collide():
    a = sketch_rowkey("a|b", "c", DAY, AGGREGATE_HASH)
    b = sketch_rowkey("a", "b|c", DAY, AGGREGATE_HASH)
    assert a != b
    assert parse_rowkey(a)[:2] == ("a|b", "c")
    assert parse_rowkey(b)[:2] == ("a", "b|c")


def test_percent_signs_round_trip():
    key = sketch_rowkey("50%|off", "%7C", DAY, AGGREGATE_HASH)
    assert parse_rowkey(key) == ("50%|off", "%7C", DAY, AGGREGATE_HASH)


def test_aggregate_row_has_the_all_zero_hash():
    assert aggregate_rowkey("app", "install", DAY).endswith(b"|" + AGGREGATE_HASH.encode())


def test_leaf_range_covers_exactly_the_dates_of_one_app_and_event():
    start, stop = leaf_scan_range("app", "buy", date(2026, 11, 1), date(2026, 11, 3))
    inside = [sketch_rowkey("app", "buy", date(2026, 11, d), "f" * 16) for d in (1, 2, 3)]
    outside = [
        sketch_rowkey("app", "buy", date(2026, 10, 31), "f" * 16),
        sketch_rowkey("app", "buy", date(2026, 11, 4), AGGREGATE_HASH),
        sketch_rowkey("app", "buy_now", date(2026, 11, 2), AGGREGATE_HASH),
        sketch_rowkey("app.x", "buy", date(2026, 11, 2), AGGREGATE_HASH),
    ]
    assert all(start <= key < stop for key in inside)
    assert not any(start <= key < stop for key in outside)


def test_empty_names_and_bad_hashes_are_rejected():
    with pytest.raises(ValueError, match="component"):
        sketch_rowkey("", "buy", DAY, AGGREGATE_HASH)
    with pytest.raises(ValueError, match="attr_hash"):
        sketch_rowkey("app", "buy", DAY, "abc")
