"""Audience sketches end to end: landing days -> assets -> HBase -> engine, against exact."""

from __future__ import annotations

import contextlib
import gzip
import json
import random
import re
from datetime import date

import pytest
from dagster import DagsterInstance, materialize

from profile_assets.audience_assets import attribute_stats, audience_sketches, trimmed_attributes
from profile_assets.raw_events import raw_events
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.exact import exact_leaf_users, exact_users
from profile_store.audiences.query import QueryError, leaves, parse_query
from profile_store.audiences.rowkey import day_prefix
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.lake.layout import landing_day
from resources.hbase import HBaseResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAYS = ("2026-11-01", "2026-11-02")
COLORS = ("red", "blue", "green", "black", "white")


def landing_rows(day: str, seed: int, users: int = 6000) -> list[str]:
    rng = random.Random(seed)
    rows = []
    for i in range(users * 3):
        user = rng.randrange(users)
        event = rng.choices(("view", "cart", "buy"), weights=(70, 20, 10))[0]
        attributes = {"color": COLORS[user % 5] if rng.random() < 0.9 else rng.choice(COLORS)}
        attributes["size"] = rng.choice("SML")
        attributes["order_id"] = f"{day}-{i}"
        rows.append(
            json.dumps(
                {
                    "event_id": f"{day}-{i}",
                    "app_id": "com.shop|eu",
                    "user_id": f"dev-{user}",
                    "id_type": "gaid",
                    "event_time": f"{day}T{rng.randrange(24):02d}:00:00.000Z",
                    "event_type": event,
                    "event_attributes": attributes,
                    "alt_ids": {},
                }
            )
        )
    return rows


def write_day(root, day: str, rows: list[str]) -> None:
    path = root / landing_day(day) / "part-00000.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as out:
        out.write("\n".join(rows) + "\n")


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory):
    return tmp_path_factory.mktemp("lake")


@pytest.fixture(scope="module")
def hbase(tmp_path_factory):
    resource = HBaseResource(data_dir=str(tmp_path_factory.mktemp("hbase")))
    yield resource
    resource.close()


def materialize_days(lake_root, hbase, days=DAYS) -> dict:
    """Each day's run result."""
    resources = {
        "spark": spark_resource_from_env({}),
        "lake": LakeResource(root=str(lake_root)),
        "hbase": hbase,
    }
    instance = DagsterInstance.ephemeral()
    results = {}
    for day in days:
        results[day] = materialize(
            [raw_events, attribute_stats, trimmed_attributes, audience_sketches],
            partition_key=day,
            resources=resources,
            instance=instance,
        )
        assert results[day].success
    return results


@pytest.fixture(scope="module")
def first_runs(spark, lake_root, hbase) -> dict:
    """The days built in order, each day's run result."""
    for seed, day in enumerate(DAYS):
        write_day(lake_root, day, landing_rows(day, seed))
    return materialize_days(lake_root, hbase)


@pytest.fixture(scope="module")
def built(spark, first_runs, lake_root):
    return spark.read.parquet(str(lake_root / "events"))


@pytest.fixture
def engine(hbase):
    @contextlib.contextmanager
    def open_table():
        with hbase.connection() as connection:
            yield connection.table(SKETCH_TABLE)

    return AudienceEngine(open_table)


def leaf(event: str, **extra) -> dict:
    return {
        "app_id": "com.shop|eu",
        "event_type": event,
        "date_from": DAYS[0],
        "date_to": DAYS[1],
        **extra,
    }


QUERIES = [
    leaf("view"),
    leaf("buy", attributes={"color": "red"}),
    leaf("cart", min_count=2),
    {"intersection": [leaf("view"), leaf("buy")]},
    {"difference": [leaf("cart", attributes={"color": "blue"}), leaf("buy")]},
    {"union": [leaf("buy", min_count=2), leaf("cart", attributes={"color": "green"})]},
    leaf("view", attributes={"size": "M"}, min_count=2),
    leaf("view", attributes={"color": "red", "size": "S"}),
]


@pytest.mark.parametrize("tree", QUERIES, ids=lambda t: json.dumps(t)[:60])
def test_estimates_bracket_the_exact_answer(spark, built, engine, tree):
    query = parse_query(tree)
    exact = len(exact_users(query, exact_leaf_users(spark, built, leaves(query))))
    answer = engine.estimate(tree)
    assert answer.lower_95 <= exact <= answer.upper_95
    assert abs(answer.estimate - exact) <= 0.1 * exact
    assert answer.rows_read > 0


def test_small_sets_are_answered_exactly(spark, built, engine):
    tree = leaf("buy", attributes={"color": "red"}, date_to=DAYS[0])
    query = parse_query(tree)
    exact = len(exact_users(query, exact_leaf_users(spark, built, leaves(query))))
    answer = engine.estimate(tree)
    assert answer.exact and answer.estimate == exact


def test_filter_on_a_trimmed_attribute_is_an_error_naming_the_days(built, engine):
    with pytest.raises(QueryError, match="order_id.*trimmed.*2026-11-01, 2026-11-02"):
        engine.estimate(leaf("view", attributes={"order_id": "x"}))


def test_a_refusal_on_the_lakes_first_day_measures_the_one_day_its_window_holds(built, engine):
    with pytest.raises(QueryError) as refused:
        engine.estimate(leaf("view", attributes={"order_id": "x"}, date_to=DAYS[0]))
    assert re.search(r"(in|over) 1 day[,:]", refused.value.problem), refused.value.problem
    assert "7 days" not in refused.value.problem


def test_days_without_sketches_are_an_error(built, engine):
    with pytest.raises(QueryError, match="no sketches .* 2026-11-03"):
        engine.estimate(leaf("view", date_to="2026-11-03"))


def test_rematerializing_a_day_removes_its_stale_rows(spark, built, lake_root, hbase):
    def day_keys():
        with hbase.connection() as connection:
            table = connection.table(SKETCH_TABLE)
            prefix = day_prefix("com.shop|eu", "buy", date(2026, 11, 2))
            return {key for key, _ in table.scan(row_prefix=prefix)}

    before = day_keys()
    only_red = [
        r.replace('"blue"', '"red"').replace('"green"', '"red"') for r in landing_rows(DAYS[1], 1)
    ]
    write_day(lake_root, DAYS[1], only_red)
    materialize_days(lake_root, hbase, days=DAYS[1:])
    after = day_keys()
    assert len(after) < len(before)
    write_day(lake_root, DAYS[1], landing_rows(DAYS[1], 1))
    materialize_days(lake_root, hbase, days=DAYS[1:])
    assert day_keys() == before


def test_one_attribute_leaves_read_one_marginal_row_and_marker_per_day(built, engine):
    answer = engine.estimate(leaf("buy", attributes={"size": "L"}))
    assert answer.rows_read == 4


def test_the_sketch_asset_reports_its_rows_by_kind(first_runs):
    result = first_runs[DAYS[0]]
    (materialization,) = result.asset_materializations_for_node("audience_sketches")
    metadata = {key: value.value for key, value in materialization.metadata.items()}
    assert metadata["aggregate_rows"] == 3  # view, cart, buy
    assert metadata["kept_marker_rows"] == 6  # color and size of each
    assert metadata["marginal_rows"] == 3 * (5 + 3)
    assert metadata["pair_marker_rows"] == 3  # (color, size) of each
    assert 0 < metadata["pair_rows"] <= 3 * 5 * 3
    kinds = ("combination", "aggregate", "marginal", "kept_marker", "pair", "pair_marker")
    assert metadata["dagster/row_count"] == sum(metadata[f"{kind}_rows"] for kind in kinds)


def test_a_pair_absent_on_built_days_counts_zero_users_there(
    spark, built, lake_root, hbase, engine
):
    # Day 3 brings an event type the earlier days (built, inside the trimming window) never saw.
    refunds = [
        json.dumps(
            {
                "event_id": f"refund-{i}",
                "app_id": "com.shop|eu",
                "user_id": f"dev-{i}",
                "id_type": "gaid",
                "event_time": "2026-11-03T10:00:00.000Z",
                "event_type": "refund",
                "event_attributes": {},
                "alt_ids": {},
            }
        )
        for i in range(40)
    ]
    write_day(lake_root, "2026-11-03", landing_rows("2026-11-03", 3, users=500) + refunds)
    materialize_days(lake_root, hbase, days=("2026-11-03",))
    answer = engine.estimate(leaf("refund", date_to="2026-11-03"))
    assert answer.exact and answer.estimate == 40
    with pytest.raises(
        QueryError,
        match=r"no sketches for com\.shop\|eu/refund on 2026-11-04: the day is not built",
    ):
        engine.estimate(leaf("refund", date_to="2026-11-04"))
