"""Activated saved audiences become segments on every id of their members' persons.

Two generated days through every asset (in process): before day 1, one audience is saved and
activated for 3 days and another for half a day; both are deactivated before day 2.
"""

from __future__ import annotations

from datetime import date

import duckdb
import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance, materialize

from profile_assets.definitions import DAILY_ASSETS
from profile_store.audiences.saved import AUDIENCE_TABLE, Activation, SavedAudiences
from profile_store.audiences.saved import ensure_table as ensure_audience_table
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import table_opener
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.pipeline import end_of_day_ms
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.segment_rules import DAY_MS
from profile_store.profiles.table import PROFILE_TABLE
from resources.hbase import HBaseResource
from resources.identity import IdentityResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAYS = ("2026-11-01", "2026-11-02")
APP = "com.shopfast.android"
BROWSERS_NOT_BUYERS = {
    "difference": [
        {
            "intersection": [
                {"app_id": APP, "event_type": "view_item", "last_days": 1, "min_count": 2},
                {"app_id": APP, "event_type": "add_to_cart", "last_days": 1},
            ]
        },
        {"app_id": APP, "event_type": "purchase", "last_days": 1},
    ]
}
BUYERS = {"app_id": APP, "event_type": "purchase", "last_days": 1}
EXACT_SQL = f"""
with e as (select user_id, event_type from read_parquet(?) where app_id = '{APP}'),
views as (select user_id from e where event_type = 'view_item'
          group by user_id having count(*) >= 2),
carts as (select distinct user_id from e where event_type = 'add_to_cart'),
buys as (select distinct user_id from e where event_type = 'purchase')
select user_id from ((select * from views intersect select * from carts) except select * from buys)
"""


@pytest.fixture(scope="module")
def activated(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("activation_lake")
    generate_lake(root, len(DAYS), 5000, seed=41, start_date=date.fromisoformat(DAYS[0]))
    hbase = HBaseResource(data_dir=str(tmp_path_factory.mktemp("hbase")))
    resources = {
        "spark": spark_resource_from_env({}),
        "lake": LakeResource(root=str(root)),
        "identity": IdentityResource(),
        "hbase": hbase,
    }
    instance = DagsterInstance.ephemeral()
    assets = DAILY_ASSETS  # without their automation conditions or bound resources
    with hbase.connection() as connection:
        ensure_audience_table(connection)
    store = SavedAudiences(table_opener(hbase.pool(), AUDIENCE_TABLE))
    browsers = store.create(
        "shop", "Browsers, not buyers", BROWSERS_NOT_BUYERS, Activation("browsers", 3)
    )
    buyers = store.create("shop", "Buyers", BUYERS, Activation("buyers-half-day", 0.5))

    def run(day: str) -> dict:
        result = materialize(
            list(assets), partition_key=day, resources=resources, instance=instance
        )
        assert result.success
        (materialization,) = result.asset_materializations_for_node("audience_activations")
        return {key: value.value for key, value in materialization.metadata.items()}

    first = run(DAYS[0])
    members = members_of(root, DAYS[0])
    persons = persons_of(root)
    reader = ProfileReader(table_opener(hbase.pool(), PROFILE_TABLE))
    buyer = sorted(buyers_of(root, DAYS[0]))[0]
    day_1_end = end_of_day_ms(date.fromisoformat(DAYS[0]))
    buyer_after_day_1 = reader.segments(buyer, now_ms=day_1_end).segments
    for audience in (browsers, buyers):
        store.update(
            "shop",
            audience.id,
            activation=Activation(
                audience.activation.segment, audience.activation.ttl_days, active=False
            ),
        )
    second = run(DAYS[1])
    yield {
        "root": root,
        "first": first,
        "second": second,
        "members": members,
        "persons": persons,
        "reader": reader,
        "buyer": buyer,
        "buyer_after_day_1": buyer_after_day_1,
    }
    hbase.close()


def members_of(root, day: str) -> set[str]:
    files = [str(p) for p in (root / "events" / f"date={day}").glob("*.parquet")]
    return {row[0] for row in duckdb.execute(EXACT_SQL, [files]).fetchall()}


def buyers_of(root, day: str) -> set[str]:
    events = pq.read_table(root / "events" / f"date={day}").to_pylist()
    return {e["user_id"] for e in events if e["app_id"] == APP and e["event_type"] == "purchase"}


def persons_of(root) -> dict[str, list[str]]:
    """Every profile -> all ids of its person (the latest identity components)."""
    rows = pq.read_table(root / latest_assignment_dir(LocalLakeStorage(root))).to_pylist()
    by_master: dict[str, list[str]] = {}
    for row in rows:
        by_master.setdefault(row["master"], []).append(row["profile"])
    return {row["profile"]: by_master[row["master"]] for row in rows}


def report(metadata: dict, name: str) -> dict:
    (entry,) = [a for a in metadata["audiences"] if a["audience"] == name]
    return entry


def test_members_are_counted_exactly_and_within_the_sketch_estimates_bounds(activated):
    entry = report(activated["first"], "Browsers, not buyers")
    assert entry["members"] == len(activated["members"]) > 20
    assert entry["within_bounds"] is True
    assert abs(entry["relative_difference"]) < 0.1


def test_every_id_of_a_members_person_carries_the_segment_with_its_expiry(activated):
    reader, persons = activated["reader"], activated["persons"]
    now = end_of_day_ms(date.fromisoformat(DAYS[0]))
    expected_expiry = now + 3 * DAY_MS
    ids = {linked for member in activated["members"] for linked in persons.get(member, [member])}
    assert len(ids) >= len(activated["members"])
    for profile in sorted(ids):
        segments = reader.segments(profile, now_ms=now).segments
        assert segments.get("browsers") == expected_expiry, profile


def test_persons_without_a_member_do_not_get_the_segment(activated):
    reader, persons = activated["reader"], activated["persons"]
    now = end_of_day_ms(date.fromisoformat(DAYS[0]))
    reached = {linked for member in activated["members"] for linked in persons.get(member, [])}
    others = sorted(set(persons) - reached)[:200]
    assert others
    for profile in others:
        assert "browsers" not in reader.segments(profile, now_ms=now).segments


def test_a_deactivated_audience_is_not_renewed_and_expires(activated):
    reader = activated["reader"]
    assert activated["second"]["active_audiences"] == 0
    day_1_end = end_of_day_ms(date.fromisoformat(DAYS[0]))
    day_2_end = end_of_day_ms(date.fromisoformat(DAYS[1]))
    member = sorted(activated["members"])[0]
    assert reader.segments(member, now_ms=day_2_end).segments["browsers"] == day_1_end + 3 * DAY_MS
    assert activated["buyer_after_day_1"]["buyers-half-day"] == day_1_end + DAY_MS // 2
    after = reader.segments(activated["buyer"], now_ms=day_2_end).segments
    assert "buyers-half-day" not in after
