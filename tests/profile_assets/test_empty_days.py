"""An empty day is a valid day wherever it falls: every asset and check of ``daily_pipeline``.

Six days run in order through every asset and check, as ``profiles run`` runs them (each day
one run of all the daily assets and checks, with the embedded gateway):

- day 1, the lake's first day: only its ``_SUCCESS`` marker;
- day 2, before any day with sketches: 0-byte files;
- day 3: a generated day, plus one device sent in both spellings of its GAID;
- day 4, between two full days: gzip files holding no line (one of blank lines only);
- day 5: a generated day;
- day 6, the last: every line quarantined.

An activated saved audience runs every day, as in the demo.
"""

from __future__ import annotations

import contextlib
import gzip
import json
from datetime import date

import happybase
import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance

from profile_assets.check_results import NOTHING_TO_JUDGE
from profile_assets.definitions import daily_assets, defs
from profile_assets.materialize_days import materialize_day
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.saved import AUDIENCE_TABLE, Activation, SavedAudiences
from profile_store.audiences.saved import ensure_table as ensure_audience_table
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.generator.lake import generate_lake
from profile_store.hbase.pool import table_opener
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.layout import IDENTITY_PROFILES, SUCCESS_MARKER, landing_day
from profile_store.profiles.table import PROFILE_TABLE, profile_key
from resources import resources_from_env

DAYS = [f"2026-11-0{n}" for n in range(1, 7)]
FIRST, NO_BYTES, FULL, NO_LINES, SECOND_FULL, ALL_QUARANTINED = DAYS
EMPTY_DAYS = (FIRST, NO_BYTES, NO_LINES, ALL_QUARANTINED)
EVENTS_PER_DAY = 5_000  # above the size where the sample's shared logins fall under the guard
SPELLING_APP = "com.spelling.check"
GAID = "6d9f1c2a-ab12-4e0f-9a7b-0c1d2e3f4a5b"


def _marker(directory) -> None:
    (directory / SUCCESS_MARKER).write_text("")


def _two_spellings_of_one_device() -> bytes:
    """Three events of one GAID in an app of its own: lower case, upper case, and a second
    delivery of the first event with the id upper-cased (the same event)."""
    base = {
        "app_id": SPELLING_APP,
        "id_type": "gaid",
        "event_type": "open",
        "event_attributes": {},
        "alt_ids": {},
    }
    events = [
        {**base, "event_id": "sp-1", "user_id": GAID, "event_time": f"{FULL}T08:00:00Z"},
        {**base, "event_id": "sp-2", "user_id": GAID.upper(), "event_time": f"{FULL}T09:00:00Z"},
        {**base, "event_id": "sp-1", "user_id": GAID.upper(), "event_time": f"{FULL}T08:00:00Z"},
    ]
    return gzip.compress("".join(json.dumps(e) + "\n" for e in events).encode())


def build_lake(root) -> None:
    generate_lake(root, 3, EVENTS_PER_DAY, seed=11, start_date=date.fromisoformat(FULL))
    first = root / landing_day(FIRST)
    first.mkdir(parents=True)
    _marker(first)
    no_bytes = root / landing_day(NO_BYTES)
    no_bytes.mkdir()
    (no_bytes / "part-00000.jsonl.gz").write_bytes(b"")
    (no_bytes / "part-00001.jsonl").write_bytes(b"")
    _marker(no_bytes)
    (root / landing_day(FULL) / "part-spelling.jsonl.gz").write_bytes(
        _two_spellings_of_one_device()
    )
    no_lines = root / landing_day(NO_LINES)
    for generated in no_lines.iterdir():
        generated.unlink()
    (no_lines / "part-00000.jsonl.gz").write_bytes(gzip.compress(b""))
    (no_lines / "part-00001.jsonl.gz").write_bytes(gzip.compress(b"\n\n"))
    _marker(no_lines)
    quarantined = root / landing_day(ALL_QUARANTINED)
    quarantined.mkdir()
    bad = "".join(
        json.dumps({"event_id": f"bad-{i}", "event_time": "never"}) + "\n" for i in range(5)
    )
    (quarantined / "part-00000.jsonl.gz").write_bytes(gzip.compress(bad.encode()))
    _marker(quarantined)


def activate_an_audience(hbase) -> None:
    """A saved, activated audience over the last two days, as the demo's."""
    shop = "com.shopfast.android"
    tree = {
        "difference": [
            {"app_id": shop, "event_type": "add_to_cart", "last_days": 2},
            {"app_id": shop, "event_type": "purchase", "last_days": 2},
        ]
    }
    with hbase.connection() as connection:
        ensure_audience_table(connection)
    store = SavedAudiences(table_opener(hbase.pool(), AUDIENCE_TABLE))
    store.create("shopfast", "cart, no purchase", tree, Activation("cart_no_purchase", 30))


@pytest.fixture(scope="module")
def pipeline(spark, tmp_path_factory):
    """Every day run in order; per day the run's success, its check evaluations and its
    materializations' metadata."""
    root = tmp_path_factory.mktemp("empty_days_lake")
    hbase_dir = tmp_path_factory.mktemp("empty_days_hbase")
    build_lake(root)
    resources = resources_from_env(
        {
            "PROFILES_LAKE_ROOT": str(root),
            "PROFILES_HBASE_DATA_DIR": str(hbase_dir),
            "SPARK_SHUFFLE_PARTITIONS": "2",
        }
    )
    instance = DagsterInstance.ephemeral()
    days = {}
    try:
        activate_an_audience(resources["hbase"])
        for day in DAYS:
            result = materialize_day(day, resources, instance)
            days[day] = {
                "success": result.success,
                "checks": {e.check_name: e for e in result.get_asset_check_evaluations()},
                "assets": _materializations(result),
            }
    finally:
        resources["hbase"].close()
    return {"root": root, "hbase_dir": hbase_dir, "days": days}


def _materializations(result) -> dict[str, dict]:
    found = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        metadata = {k: v.value for k, v in materialization.metadata.items()}
        found[materialization.asset_key.to_user_string()] = metadata
    return found


EVERY_ASSET = {key.to_user_string() for asset in daily_assets for key in asset.keys}
EVERY_CHECK = {
    spec.name
    for definition in [*defs.asset_checks, *daily_assets]
    for spec in definition.check_specs
    if spec.asset_key.to_user_string() in EVERY_ASSET
}


@pytest.mark.parametrize("day", DAYS)
def test_every_asset_of_the_day_is_built(pipeline, day):
    outcome = pipeline["days"][day]
    assert outcome["success"]
    assert set(outcome["assets"]) == EVERY_ASSET


@pytest.mark.parametrize("day", DAYS)
def test_every_check_of_the_day_passes(pipeline, day):
    checks = pipeline["days"][day]["checks"]
    assert set(checks) == EVERY_CHECK
    failed = {name: e.description for name, e in checks.items() if not e.passed}
    assert not failed


def test_the_first_day_has_nothing_to_judge_but_its_schema(pipeline):
    checks = pipeline["days"][FIRST]["checks"]
    unjudged = {name for name, e in checks.items() if NOTHING_TO_JUDGE in e.metadata}
    assert unjudged == EVERY_CHECK - {"raw_events_schema"}
    assert checks["raw_events_ids"].description == f"nothing to judge: no clean events on {FIRST}"


def test_a_day_between_full_days_judges_what_spans_days_and_not_the_day_alone(pipeline):
    checks = pipeline["days"][NO_LINES]["checks"]
    unjudged = {name for name, e in checks.items() if NOTHING_TO_JUDGE in e.metadata}
    assert unjudged == {
        "raw_events_ids",
        "raw_events_time_in_day",
        "raw_events_event_type",
        "raw_events_quarantine_share",
        "identity_bridging_kinds",
    }
    accuracy = checks["audience_estimation_error"].metadata
    assert accuracy["days_queried"].value == f"{FIRST}..{NO_LINES} (4 days)"


@pytest.mark.parametrize("day", EMPTY_DAYS)
def test_an_empty_day_has_no_clean_events_and_quarantines_no_file(pipeline, day):
    raw_events = pipeline["days"][day]["assets"]["raw_events"]
    assert raw_events["dagster/row_count"] == 0
    assert raw_events["unreadable_files"] == 0


def test_a_day_whose_every_line_is_quarantined_keeps_them_all(pipeline):
    raw_events = pipeline["days"][ALL_QUARANTINED]["assets"]["raw_events"]
    assert raw_events["quarantined_rows"] == raw_events["received_rows"] == 5


@pytest.mark.parametrize("day", [FULL, SECOND_FULL])
def test_the_full_days_after_empty_ones_are_built_normally(pipeline, day):
    assets = pipeline["days"][day]["assets"]
    assert assets["raw_events"]["dagster/row_count"] > EVENTS_PER_DAY * 0.9
    assert assets["audience_sketches"]["aggregate_rows"] > 0
    assert assets["compacted_profiles"]["dagster/row_count"] > 0
    accuracy = pipeline["days"][day]["checks"]["audience_estimation_error"]
    assert NOTHING_TO_JUDGE not in accuracy.metadata
    assert accuracy.metadata["queries"].value == 200


def test_a_device_sent_in_two_spellings_is_one_event_stream_of_one_profile(pipeline):
    profiles = pq.read_table(pipeline["root"] / IDENTITY_PROFILES / f"date={FULL}").to_pylist()
    spelled = [p for p in profiles if p["profile"].lower() == GAID]
    assert [(p["profile"], p["events"]) for p in spelled] == [(GAID, 2)]
    assert pipeline["days"][FULL]["assets"]["raw_events"]["duplicates_dropped"] >= 1


def test_a_device_sent_in_two_spellings_is_one_profile_row_and_one_sketch_user(pipeline):
    leaf = {"app_id": SPELLING_APP, "event_type": "open", "date_from": FULL, "date_to": FULL}
    with EmbeddedGateway(pipeline["hbase_dir"]) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        try:
            profiles = connection.table(PROFILE_TABLE)
            rows = {
                spelling: bool(profiles.row(profile_key(spelling)))
                for spelling in (GAID, GAID.upper())
            }
            sketches = connection.table(SKETCH_TABLE)
            answer = AudienceEngine(lambda: contextlib.nullcontext(sketches)).estimate(leaf)
        finally:
            connection.close()
    assert rows == {GAID: True, GAID.upper(): False}
    assert (answer.estimate, answer.exact) == (1.0, True)


def test_a_query_spanning_every_day_answers(pipeline):
    leaf = {"app_id": "com.shopfast.android", "event_type": "view_item"}
    with EmbeddedGateway(pipeline["hbase_dir"]) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        try:
            table = connection.table(SKETCH_TABLE)
            engine = AudienceEngine(lambda: contextlib.nullcontext(table))
            spanning = engine.estimate({**leaf, "date_from": DAYS[0], "date_to": DAYS[-1]})
            full_days = engine.estimate({**leaf, "date_from": FULL, "date_to": SECOND_FULL})
        finally:
            connection.close()
    assert spanning.estimate == full_days.estimate > 0
