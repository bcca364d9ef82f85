"""Runs launched the way users launch them succeed, with every asset and every check.

One instance directory, one ``dagster-webserver`` and one ``dagster-daemon`` over
``workspace.yaml`` (see ``dagster_services``) on a generated lake of three landed days; a fourth
day lands during the module. The tests run in file order, each on what the previous ones built:

1. the schedule's tick for day 1, evaluated and launched as the UI's "Test schedule" does: a
   partitioned run of ``daily_pipeline``;
2. a two-day backfill of ``daily_pipeline`` (the job's Partitions tab), days 2 and 3, one run
   a day in day order;
3. the landing sensor, switched on: its first tick sees all four days and runs exactly the new
   day 4, not the days the runs above already ingested from the same files, in a run that
   carries the job's whole-day tag;
4. ``raw_events`` of day 4 re-materialized alone (the asset page): the automation sensor's run
   recomputes that day's downstream assets;
5. an erasure request recorded by ``profiles forget``: the erasure sensor's run carries it out;
6. a run that fails (launched with a config value ingest refuses) shows its cause and the
   step's captured stderr on its run page.

Each run is executed by its own run worker process, which imports the code location as Dagster
does: a run that dies on start (as every launched run once did, in an import that called
``sys.exit``) fails here with the run's own error text. This module is also the CI gate for data
quality: every asset and every asset check of the location, on every day, through that path.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

import pyarrow.parquet as pq
import pytest
from dagster import DagsterRunStatus, RunsFilter
from dagster_services import EVERY_ASSET, assert_complete, over_generated_lake

from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS

DAYS = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
EVENTS_PER_DAY = 5_000
DOWNSTREAM_OF_RAW_EVENTS = EVERY_ASSET - {"raw_events"}


@pytest.fixture(scope="module")
def dagster(tmp_path_factory):
    """Webserver and daemon over days 1-3 landed; day 4 generated but held back."""
    services = over_generated_lake(tmp_path_factory, DAYS, EVENTS_PER_DAY, seed=5)
    try:
        services.start_webserver()
        # The landing sensor is on by default: off until test 3, so that the runs below are the
        # ones the tests launch (the sensor must then leave the days they covered alone).
        services.stop_sensor("landing_sensor")
        # Off until test 5 records a request with no run of the daemon's holding the store.
        services.stop_sensor("erasure_sensor")
        services.start_daemon()
        yield services
    finally:
        services.stop()


def test_the_schedules_tick_launches_a_partitioned_daily_run_that_succeeds(dagster):
    tick_time = datetime.fromisoformat(DAYS[0]).replace(tzinfo=UTC) + timedelta(days=1, hours=3)
    (request,) = dagster.schedule_tick_run_requests(
        "daily_pipeline_schedule", tick_time.timestamp()
    )
    tags = {tag["key"]: tag["value"] for tag in request["tags"]}
    assert tags["dagster/partition"] == DAYS[0]
    run_id = dagster.launch_run_request("daily_pipeline", request)
    dagster.wait_for_runs(RunsFilter(run_ids=[run_id]), 1)
    assert_complete(dagster, run_id, EVERY_ASSET)


def test_a_two_day_backfill_of_the_daily_job_succeeds_day_by_day(dagster):
    backfill_id = dagster.launch_job_backfill("daily_pipeline", DAYS[1:3])
    run_ids = dagster.wait_for_runs(RunsFilter.for_backfill(backfill_id), 2)
    with dagster.instance() as instance:
        runs = [instance.get_run_by_id(run_id) for run_id in run_ids]
        stats = {run.run_id: instance.get_run_stats(run.run_id) for run in runs}
    in_start_order = sorted(runs, key=lambda run: stats[run.run_id].start_time)
    assert [run.tags["dagster/partition"] for run in in_start_order] == DAYS[1:3]
    for run in runs:
        assert_complete(dagster, run.run_id, EVERY_ASSET)


def test_the_landing_sensor_runs_exactly_the_new_day(dagster):
    dagster.land_held_back()
    dagster.start_sensor("landing_sensor")
    (run_id,) = dagster.wait_for_runs(RunsFilter(tags={"dagster/sensor_name": "landing_sensor"}), 1)
    with dagster.instance() as instance:
        tags = instance.get_run_by_id(run_id).tags
    assert tags["dagster/partition"] == DAYS[3]
    assert WHOLE_DAY_RUN_TAGS.items() <= tags.items()
    assert_complete(dagster, run_id, EVERY_ASSET)
    ticks = [tick for tick in dagster.sensor_state("landing_sensor")["ticks"] if tick["runKeys"]]
    (launching,) = ticks
    assert [key.split(":")[0] for key in launching["runKeys"]] == [DAYS[3]]
    assert sorted(json.loads(launching["cursor"])) == DAYS


def test_raw_events_rematerialized_alone_brings_its_downstream_day_by_automation(dagster):
    run_id = dagster.launch_asset_run(["raw_events"], DAYS[3])
    dagster.wait_for_runs(RunsFilter(run_ids=[run_id]), 1)
    assert dagster.materialized(run_id) == {"raw_events"}
    # The automation sensor requests the day's downstream assets (for an earlier day also the
    # trimming and sketches of the later days whose 7-day window holds it, then as a backfill).
    automation = RunsFilter(tags={"dagster/sensor_name": "automation_sensor"})
    wanted = {(asset, DAYS[3]) for asset in DOWNSTREAM_OF_RAW_EVENTS}
    deadline = time.monotonic() + 600
    while True:
        run_ids = dagster.wait_for_runs(automation, 1)
        done = set().union(*(dagster.materialized_partitions(r) for r in run_ids))
        if wanted <= done:
            break
        assert time.monotonic() < deadline, f"automation materialized only {sorted(done)}"
        time.sleep(2)
    for automation_run in run_ids:
        failures = dagster.check_failures(automation_run)
        assert failures == {}, dagster.explain_run(automation_run)
    assert {"audience_estimation_error", "identity_quality_check"} <= set().union(
        *(dagster.check_outcomes(r) for r in run_ids)
    )


def test_an_erasure_request_is_carried_out_by_the_erasure_sensors_run(dagster):
    events = pq.read_table(dagster.lake / "events" / f"date={DAYS[3]}", columns=["user_id"])
    forgotten = sorted(set(events.column("user_id").to_pylist()))[0]
    recorded = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "forget", forgotten, "--json"],
        env=dagster.env,
        capture_output=True,
        text=True,
        check=True,
    )
    request_id = json.loads(recorded.stdout)["request_id"]
    dagster.start_sensor("erasure_sensor")
    (run_id,) = dagster.wait_for_runs(RunsFilter(tags={"dagster/sensor_name": "erasure_sensor"}), 1)
    assert "erasure" in dagster.materialized(run_id)
    report = json.loads((dagster.lake / "erasure" / "reports" / f"{request_id}.json").read_text())
    assert report["outcome"] == "erased" and report["sketch_rows_retaining"] == 0
    assert DAYS[3] in report["sketch_days_rebuilt"]
    remaining = pq.read_table(dagster.lake / "events" / f"date={DAYS[3]}", columns=["user_id"])
    assert forgotten not in remaining.column("user_id").to_pylist()


def test_no_run_launched_above_failed(dagster):
    with dagster.instance() as instance:
        failed = instance.get_runs(
            filters=RunsFilter(statuses=[DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED])
        )
    assert [dagster.explain_run(run.run_id) for run in failed] == []


def test_a_failed_run_shows_its_cause_and_its_stderr_on_the_run_page(dagster):
    bad_config = {"ops": {"raw_events": {"config": {"max_attributes": 0}}}}
    run_id = dagster.launch_job_run("daily_pipeline", DAYS[0], run_config=bad_config)
    dagster.wait_for_runs(RunsFilter(run_ids=[run_id]), 1, must_succeed=False)
    with dagster.instance() as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
    messages, stderr = dagster.run_page(run_id)
    cause = "max_attributes: must be >= 1, got 0"
    assert any(cause in message for message in messages), messages
    assert cause in stderr
