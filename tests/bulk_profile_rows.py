"""Compacted rows of two days for the bulk-load tests, and both ways of writing them.

Day 2 writes four persons' ids. Day 3 drops a segment and a counter, makes a linked id a master
(its ``s:master`` goes), links a new id, changes nothing of one row, and finds one row already
written by a later day (day 4): that row must stay as it is. Live ``u:`` cells written between
the days belong to the real-time path and survive both ways.
"""

from __future__ import annotations

from collections.abc import Callable

import happybase
from pyspark.sql import DataFrame, SparkSession

from profile_store.profiles.bulk_profiles import bulk_replace_profiles
from profile_store.profiles.profile_writer import profile_row, replace_profiles
from profile_store.profiles.table import PROFILE_TABLE

DAY = 86_400_000
HALF_LIFE = 7 * DAY
SCHEMA = (
    "profile string, master string, id_type string, first_seen_ms bigint, devices bigint, "
    "segments map<string,bigint>, counters map<string,struct<value:double,last_ms:bigint>>, "
    "associations array<struct<profile:string,id_type:string>>"
)


def compacted(
    profile: str,
    master: str,
    segments: dict[str, int],
    counters: dict[str, tuple[float, int]] | None,
    associations: list[tuple[str, str | None]],
    id_type: str = "gaid",
    first_seen_ms: int = 1_700_000_000_000,
) -> dict:
    return {
        "profile": profile,
        "master": master,
        "id_type": id_type,
        "first_seen_ms": first_seen_ms,
        "devices": len(associations) + 1,
        "segments": segments,
        "counters": None
        if counters is None
        else {event: {"value": v, "last_ms": t} for event, (v, t) in counters.items()},
        "associations": [{"profile": p, "id_type": t} for p, t in associations],
    }


DAY_2 = [
    compacted(
        "gaid-a",
        "gaid-a",
        {"buyers": 40 * DAY, "shoppers": 33 * DAY},
        {"purchase": (2.5, 2 * DAY)},
        [("cookie.b", "cookie")],
    ),
    compacted(
        "cookie.b",
        "gaid-a",
        {"buyers": 40 * DAY, "shoppers": 33 * DAY},
        {"purchase": (2.5, 2 * DAY)},
        [("gaid-a", "gaid")],
        id_type="cookie",
    ),
    compacted(
        "idfa-C",
        "gaid-x",
        {"clickers": 9 * DAY},
        {"click": (0.1, DAY), "view_item": (1e-300, DAY)},
        [("gaid-x", "gaid")],
        id_type="idfa",
    ),
    compacted("gaid-d|%", "gaid-d|%", {}, None, [], first_seen_ms=0),
    compacted(
        "gaid-é",
        "gaid-é",
        {"sport_fans": 12 * DAY},
        {"article_view": (3.0, 2 * DAY)},
        [("x", None)],
    ),
]
DAY_3 = [
    # a segment and a counter dropped, a new id linked
    compacted(
        "gaid-a",
        "gaid-a",
        {"buyers": 41 * DAY},
        {"view_item": (1.0, 3 * DAY)},
        [("cookie.b", "cookie"), ("cookie.n", "cookie")],
    ),
    compacted(
        "cookie.b",
        "gaid-a",
        {"buyers": 41 * DAY},
        {"view_item": (1.0, 3 * DAY)},
        [("gaid-a", "gaid"), ("cookie.n", "cookie")],
        id_type="cookie",
    ),
    compacted(
        "cookie.n",
        "gaid-a",
        {"buyers": 41 * DAY},
        {"view_item": (1.0, 3 * DAY)},
        [("gaid-a", "gaid"), ("cookie.b", "cookie")],
        id_type="cookie",
    ),
    # split from its person: now a master of its own
    compacted("idfa-C", "idfa-C", {}, {"click": (0.05, DAY)}, [], id_type="idfa"),
    # unchanged
    compacted("gaid-d|%", "gaid-d|%", {}, None, [], first_seen_ms=0),
    # already written by day 4: left alone
    compacted("gaid-é", "gaid-é", {}, None, []),
]
DAY_4_ROW = compacted("gaid-é", "gaid-é", {"sport_fans": 14 * DAY}, None, [])
LIVE_CELLS = {b"p|gaid-a": {b"u:20000|0|7": b"live", b"u:vip": str(50 * DAY).encode()}}
TIMESTAMPS = {2: 1_800_000_000_000, 3: 1_800_000_100_000, 4: 1_800_000_050_000}


def frame(spark: SparkSession, rows: list[dict]) -> DataFrame:
    return spark.createDataFrame(rows, SCHEMA)


Writer = Callable[[DataFrame, int, int], tuple[int, int]]
"""(rows, as_of_ms, timestamp) -> (rows written, stale cells deleted)."""


def thrift_writer(table: happybase.Table) -> Writer:
    def write(rows: DataFrame, as_of_ms: int, timestamp: int) -> tuple[int, int]:
        dicts = [row.asDict(recursive=True) for row in rows.collect()]
        for row in dicts:  # as Arrow's to_pylist gives maps: lists of pairs
            row["segments"] = list((row["segments"] or {}).items())
            row["counters"] = list((row["counters"] or {}).items()) if row["counters"] else None
        profile_rows = [profile_row(row, HALF_LIFE, as_of_ms) for row in dicts]
        return len(profile_rows), replace_profiles(table, profile_rows, timestamp)

    return write


def bulk_writer(store_dir, table_name: str = PROFILE_TABLE) -> Writer:
    def write(rows: DataFrame, as_of_ms: int, timestamp: int) -> tuple[int, int]:
        return bulk_replace_profiles(rows, store_dir, table_name, HALF_LIFE, as_of_ms, timestamp)

    return write


def write_the_days(spark: SparkSession, table: happybase.Table, write: Writer) -> list:
    """Day 4's row first (as if written before a re-run of day 3), then days 2 and 3, with the
    live cells in between; returns what each write returned."""
    results = [write(frame(spark, [DAY_4_ROW]), 5 * DAY, TIMESTAMPS[4])]
    results.append(write(frame(spark, DAY_2), 3 * DAY, TIMESTAMPS[2]))
    for key, cells in LIVE_CELLS.items():
        table.put(key, cells, timestamp=TIMESTAMPS[2] + 1)
    results.append(write(frame(spark, DAY_3), 4 * DAY, TIMESTAMPS[3]))
    return results


def every_cell(table: happybase.Table) -> list:
    """Every row's cells with their timestamps, in key order."""
    return [(key, sorted(cells.items())) for key, cells in table.scan(include_timestamp=True)]
