"""A small, known audience data set for the engine, CLI and HTTP tests (the gateways holding it
are fixtures of ``tests/conftest.py``).

Sketch rows are written straight into the ``sketches`` table (no Spark), laid out as the
pipeline writes them: per (app, event, day) one aggregate row carrying the kept attributes, one
row per kept-attribute combination, and per kept attribute a kept marker and one marginal row
per value. Every set is small, so every answer is exact:

| app / event | 2026-11-01 | 2026-11-02 | kept attributes |
| --- | --- | --- | --- |
| com.shop / install | u0..u59 | u40..u99 | none |
| com.shop / purchase | u0..u19 (even: red, odd: blue) | u20..u29 (red) | color |
| com.rival / install | r0..r9 | (not built) | none |

Users u0..u4 purchase 3 times on 2026-11-01, everyone else once a day.

So: installs over both days 100; purchasers 30; red purchasers 20; purchasers with at least
3 purchases 5; installers who never purchased 70; com.rival has no sketches for 2026-11-02.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date

import happybase
from datasketches import AccumulatorPolicy, update_theta_sketch, update_tuple_sketch

from profile_store.audiences.built_days import built_day_cells
from profile_store.audiences.rowkey import (
    AGGREGATE_HASH,
    kept_marker_rowkey,
    marginal_rowkey,
    sketch_rowkey,
)
from profile_store.audiences.saved import ensure_table as ensure_audience_table
from profile_store.audiences.sketch_table import (
    SKETCH_TABLE,
    ensure_table,
    write_rows,
)
from profile_store.audiences.tuple_serde import SERDE

DAY_1, DAY_2 = date(2026, 11, 1), date(2026, 11, 2)


def _row(
    app: str,
    event: str,
    day: date,
    events_by_user: dict[str, int],
    combination: dict[str, str] | None = None,
    kept: list[str] | None = None,
    marginal: tuple[str, str] | None = None,
    trimmed: dict | None = None,
) -> dict:
    theta = update_theta_sketch(12)
    counts = update_tuple_sketch(AccumulatorPolicy(), 12)
    for user, events in events_by_user.items():
        theta.update(user)
        counts.update(user, events)
    if marginal is not None:
        kind, rowkey = "marginal", marginal_rowkey(app, event, day, *marginal)
    elif kept is not None:
        kind, rowkey = "aggregate", sketch_rowkey(app, event, day, AGGREGATE_HASH)
    else:
        attr_hash = hashlib.sha256(json.dumps(combination).encode()).hexdigest()[:16]
        kind, rowkey = "combination", sketch_rowkey(app, event, day, attr_hash)
    return {
        "rowkey": rowkey.decode(),
        "row_kind": kind,
        "theta": theta.compact().serialize(),
        "counts": counts.compact().serialize(SERDE),
        "events": sum(events_by_user.values()),
        "users_estimate": float(len(events_by_user)),
        "combination": [{"key": k, "value": v} for k, v in (combination or {}).items()],
        "kept_attributes": kept,
        "trimmed_attributes": None if kept is None else json.dumps(trimmed or {}),
    }


def day_rows(
    app: str,
    event: str,
    day: date,
    groups: dict[str, dict[str, int]],
    kept: list[str],
    trimmed: dict | None = None,
) -> list[dict]:
    """The aggregate row and one row per combination; ``groups`` maps 'name=value' to users;
    ``trimmed``: the aggregate row's trimmed attributes with their figures.

    With one attribute, each combination's marginal row holds the same users.
    """
    everyone: dict[str, int] = {}
    rows = []
    for combination, users in groups.items():
        for user, events in users.items():
            everyone[user] = everyone.get(user, 0) + events
        if kept:
            name, value = combination.split("=")
            rows.append(_row(app, event, day, users, combination={name: value}))
            rows.append(_row(app, event, day, users, marginal=(name, value)))
    markers = [_kept_marker(app, event, day, name) for name in kept]
    return [_row(app, event, day, everyone, kept=kept, trimmed=trimmed), *rows, *markers]


def _kept_marker(app: str, event: str, day: date, attribute: str) -> dict:
    rowkey = kept_marker_rowkey(app, event, day, attribute).decode()
    return {"rowkey": rowkey, "row_kind": "kept_marker", "attribute": attribute}


def audience_rows() -> list[dict]:
    """The rows of the data set in the module docstring."""
    purchases_day_1 = {f"u{i}": 3 if i < 5 else 1 for i in range(20)}
    return [
        *day_rows("com.shop", "install", DAY_1, {"": {f"u{i}": 1 for i in range(60)}}, []),
        *day_rows("com.shop", "install", DAY_2, {"": {f"u{i}": 1 for i in range(40, 100)}}, []),
        *day_rows(
            "com.shop",
            "purchase",
            DAY_1,
            {
                "color=red": {u: n for u, n in purchases_day_1.items() if int(u[1:]) % 2 == 0},
                "color=blue": {u: n for u, n in purchases_day_1.items() if int(u[1:]) % 2 == 1},
            },
            ["color"],
        ),
        *day_rows(
            "com.shop",
            "purchase",
            DAY_2,
            {"color=red": {f"u{i}": 1 for i in range(20, 30)}},
            ["color"],
        ),
        *day_rows("com.rival", "install", DAY_1, {"": {f"r{i}": 1 for i in range(10)}}, []),
    ]


def write_audience(connection: happybase.Connection) -> None:
    """Create the sketch table and write the data set into it."""
    ensure_table(connection)
    write_rows(connection.table(SKETCH_TABLE), audience_rows())


# -- the audience builder: the same data set with built-day markers, and saved audiences -------

SHOP_KEY = "shop-key-0123456789abcdef"
RIVAL_KEY = "rival-key-0123456789abcdef"
BUILDER_TENANTS = {
    "tenants": [
        {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]},
        {"name": "rival", "api_keys": [RIVAL_KEY], "app_ids": ["com.rival"]},
    ]
}
BUILT_PAIRS = {
    DAY_1: [("com.rival", "install"), ("com.shop", "install"), ("com.shop", "purchase")],
    DAY_2: [("com.shop", "install"), ("com.shop", "purchase")],
}


def write_builder_tables(connection: happybase.Connection) -> None:
    """The data set as ``audience_sketches`` leaves it: both days built (com.rival had no
    installs on 2026-11-02), plus an empty ``audiences`` table."""
    write_audience(connection)
    for day, pairs in BUILT_PAIRS.items():
        connection.table(SKETCH_TABLE).put(*built_day_cells(day, pairs))
    ensure_audience_table(connection)
