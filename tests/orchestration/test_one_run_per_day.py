"""One run per day: while a day's whole run, launched from the UI, is in progress, neither the
landing sensor nor the automation sensor adds a run of that day.

The production instance (``examples/dagster.yaml``) on a throwaway PostgreSQL, a
``dagster-webserver`` and a ``dagster-daemon`` over two landed days, the sensors evaluated every
5 s. The code location is the project's with its Spark resource held at a gate
(``held_location``): a run waits at its first Spark step, ``raw_events``, until the test opens
the gate, so the runs stay in progress for as many sensor ticks as the test needs. The tests run
in file order, each on what the previous ones did:

1. day 1 launched from ``daily_pipeline``'s launchpad and day 2 with the asset graph's
   *Materialize all* (every daily asset and its checks, one partition), both through the
   webserver's GraphQL: the first waits at the gate, the second in the queue (one run of the
   location at a time); the launchpad's run carries the job's whole-day tag;
2. the landing sensor, switched on, ticks over both days without a run request and without
   marking them seen;
3. the gate opens and both runs succeed; after the second ended, the landing sensor and the
   automation sensor tick three times more each: each day has exactly its one run, no backfill
   was launched, and the landing sensor has marked both days seen (ingested from the same files).

The automation sensor is on throughout, as shipped.
"""

from __future__ import annotations

import json
import time

import pytest
from dagster import DagsterEventType, DagsterRunStatus, RunsFilter
from dagster_services import EVERY_ASSET, PRODUCTION_INSTANCE, REPO, over_generated_lake
from held_location import GATE_VARIABLE, OPEN

from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS

DAYS = ["2026-11-01", "2026-11-02"]
EVENTS_PER_DAY = 500
TICKS = 3
WORKSPACE = """\
load_from:
  - python_module:
      module_name: held_location
      attribute: defs
      working_directory: {directory}
      location_name: profile_assets.definitions
"""


@pytest.fixture(scope="module")
def dagster(tmp_path_factory, production_env):
    """Webserver and daemon on the production instance over two landed days, the landing sensor
    off until test 2."""
    gate = tmp_path_factory.mktemp("gate")
    workspace = tmp_path_factory.mktemp("workspace") / "workspace.yaml"
    workspace.write_text(WORKSPACE.format(directory=REPO / "tests" / "orchestration"))
    services = over_generated_lake(
        tmp_path_factory,
        DAYS,
        EVENTS_PER_DAY,
        seed=17,
        env={**production_env, GATE_VARIABLE: str(gate)},
        instance_config=PRODUCTION_INSTANCE,
        hold_back_last=False,
        answer_key=False,
        workspace=workspace,
    )
    services.gate = gate
    try:
        services.start_webserver()
        services.stop_sensor("landing_sensor")
        services.start_daemon()
        yield services
    finally:
        services.stop()


def runs_of(dagster, day: str) -> list[str]:
    with dagster.instance() as instance:
        return [
            run.run_id for run in instance.get_runs(RunsFilter(tags={"dagster/partition": day}))
        ]


def who_launched(dagster, run_ids: list[str]) -> str:
    """Each run's job, assets and tags: which sensor, backfill or user launched it."""
    with dagster.instance() as instance:
        runs = [instance.get_run_by_id(run_id) for run_id in run_ids]
    return "\n".join(
        f"{run.run_id} {run.job_name} {sorted(map(str, run.asset_selection or []))} {run.tags}"
        for run in runs
    )


def wait_at_the_gate(dagster, timeout_s: float = 300) -> None:
    """Until a run worker waits at the gate."""
    deadline = time.monotonic() + timeout_s
    while not list(dagster.gate.glob("waiting-*")):
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no run reached the gate after {timeout_s:.0f} s\n"
                f"daemon log:\n{dagster.log_tail('daemon')}"
            )
        time.sleep(0.5)


def test_runs_launched_from_the_ui_wait_at_the_gate_and_in_the_queue(dagster):
    dagster.ui_runs = {
        DAYS[0]: dagster.launch_job_run("daily_pipeline", DAYS[0]),
        DAYS[1]: dagster.launch_asset_run(EVERY_ASSET, DAYS[1], with_checks=True),
    }
    wait_at_the_gate(dagster)
    with dagster.instance() as instance:
        launchpad_run = instance.get_run_by_id(dagster.ui_runs[DAYS[0]])
        materialize_all_run = instance.get_run_by_id(dagster.ui_runs[DAYS[1]])
    assert launchpad_run.status == DagsterRunStatus.STARTED
    assert materialize_all_run.status == DagsterRunStatus.QUEUED
    assert WHOLE_DAY_RUN_TAGS.items() <= launchpad_run.tags.items()


def test_the_landing_sensor_leaves_days_with_a_run_in_progress_for_a_later_tick(dagster):
    switched_on = dagster.sensor_state("landing_sensor")["ticks"]
    since = max((tick["timestamp"] for tick in switched_on), default=0)
    dagster.start_sensor("landing_sensor")
    ticks = dagster.wait_for_ticks("landing_sensor", TICKS, after=since)
    assert [tick["runKeys"] for tick in ticks] == [[]] * len(ticks)
    for tick in ticks:
        assert not set(json.loads(tick["cursor"] or "{}")) & set(DAYS), tick
    assert {day: runs_of(dagster, day) for day in DAYS} == {
        day: [run_id] for day, run_id in dagster.ui_runs.items()
    }


def test_after_the_runs_and_more_ticks_each_day_has_exactly_its_one_run(dagster):
    (dagster.gate / OPEN).touch()
    dagster.wait_for_runs(
        RunsFilter(run_ids=list(dagster.ui_runs.values())), len(DAYS), timeout_s=1800
    )
    ended = max(
        dagster.event_time(run_id, DagsterEventType.RUN_SUCCESS)
        for run_id in dagster.ui_runs.values()
    )
    landing = dagster.wait_for_ticks("landing_sensor", TICKS, after=ended)
    dagster.wait_for_ticks("automation_sensor", TICKS, after=ended)
    runs = {day: runs_of(dagster, day) for day in DAYS}
    assert runs == {day: [run_id] for day, run_id in dagster.ui_runs.items()}, who_launched(
        dagster, [run_id for ids in runs.values() for run_id in ids]
    )
    with dagster.instance() as instance:
        assert instance.get_backfills() == []
    cursors = [tick["cursor"] for tick in landing if tick["cursor"]]
    assert cursors, landing
    assert set(json.loads(cursors[0])) == set(DAYS)
