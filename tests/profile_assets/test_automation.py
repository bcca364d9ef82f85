"""Declarative automation over the real code location: what the automation sensor requests.

The conditions are evaluated with ``dagster.evaluate_automation_conditions`` (what the sensor
does on each tick, cursor carried from tick to tick) against a temporary instance whose runs
materialized a small generated lake with the embedded defaults.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DefaultSensorStatus,
    Definitions,
    build_schedule_context,
    evaluate_automation_conditions,
    in_process_executor,
    materialize,
)

from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS
from profile_assets.definitions import daily_assets, defs
from profile_assets.jobs import daily_pipeline
from profile_assets.schedules import daily_schedule
from profile_store.generator.lake import generate_lake
from resources import resources_from_env
from sensors.automation_sensor import automation_sensor

D1, D2 = "2026-11-01", "2026-11-02"
DOWNSTREAM = {
    "attribute_stats",
    "trimmed_attributes",
    "audience_sketches",
    "audience_activations",
    "identity_edges",
    "identity_components",
    "compacted_profiles",
}
GRAPH = defs.get_repository_def().asset_graph


def requested(result) -> dict[str, list[str]]:
    """Asset -> requested day partitions of one evaluation."""
    out = {}
    for key in GRAPH.get_all_asset_keys():
        partitions = result.get_requested_partitions(key)
        if partitions:
            out[key.to_user_string()] = sorted(partitions)
    return out


def lake_resources(tmp_path_factory, name: str) -> dict:
    root = tmp_path_factory.mktemp(name)
    generate_lake(root, 2, 2_000, seed=5, start_date=date.fromisoformat(D1))
    return resources_from_env(
        {
            "PROFILES_LAKE_ROOT": str(root),
            "PROFILES_HBASE_DATA_DIR": str(tmp_path_factory.mktemp(f"{name}_hbase")),
            "SPARK_SHUFFLE_PARTITIONS": "2",
        }
    )


def raw_events_alone(
    day: str, resources: dict, instance: DagsterInstance, tags: dict[str, str] | None = None
) -> None:
    """raw_events of one day materialized on its own, as from the UI."""
    materialize(
        list(daily_assets),
        selection=["raw_events"],
        partition_key=day,
        resources=resources,
        instance=instance,
        tags=tags,
    )


@pytest.fixture(scope="module")
def ticks(spark, tmp_path_factory) -> dict[str, dict[str, list[str]]]:
    """One story, a tick after each step: the requests the sensor would make."""
    resources = lake_resources(tmp_path_factory, "automation_lake")
    instance = DagsterInstance.ephemeral()
    location = Definitions(
        assets=list(daily_assets),
        asset_checks=list(defs.asset_checks),
        jobs=[daily_pipeline],
        resources=resources,
        executor=in_process_executor,
    )
    story = {}
    tick = evaluate_automation_conditions(defs=defs, instance=instance)
    story["automation turned on"] = requested(tick)

    def next_tick(step: str) -> dict[str, list[str]]:
        nonlocal tick
        tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=tick.cursor)
        story[step] = requested(tick)
        return story[step]

    try:
        landing_run = location.resolve_job_def("daily_pipeline").execute_in_process(
            partition_key=D1, instance=instance
        )
        assert landing_run.success
        next_tick("daily_pipeline ran D1")

        raw_events_alone(D2, resources, instance)
        requests = next_tick("raw_events D2 alone")

        automation_run = materialize(
            [*daily_assets, *defs.asset_checks],
            selection=list(requests),
            partition_key=D2,
            resources=resources,
            instance=instance,
        )
        assert automation_run.success
        next_tick("requested run done")

        raw_events_alone(D1, resources, instance)
        requests = next_tick("raw_events D1 re-run alone")

        old_day_run = materialize(
            [*daily_assets, *defs.asset_checks],
            selection=[asset for asset, days in requests.items() if D1 in days],
            partition_key=D1,
            resources=resources,
            instance=instance,
        )
        assert old_day_run.success
        next_tick("the old day's requested run done")

        # What a tick can read while a whole day's run (the landing sensor's) is between steps:
        # its first steps recorded, the run seen ended, the day's next assets neither recorded
        # nor in progress. The next tick reads the rest of the run.
        materialize(
            list(daily_assets),
            selection=["raw_events", "attribute_stats"],
            partition_key=D2,
            resources=resources,
            instance=instance,
            tags=WHOLE_DAY_RUN_TAGS,
        )
        next_tick("raw_events and attribute_stats D2 recorded by a whole day's run")
        rest_of_the_day = materialize(
            [*daily_assets, *defs.asset_checks],
            selection=sorted(DOWNSTREAM - {"attribute_stats"}),
            partition_key=D2,
            resources=resources,
            instance=instance,
            tags=WHOLE_DAY_RUN_TAGS,
        )
        assert rest_of_the_day.success
        next_tick("the rest of that whole day's run recorded")

        rerun = location.resolve_job_def("daily_pipeline").execute_in_process(
            partition_key=D1, instance=instance
        )
        assert rerun.success
        next_tick("daily_pipeline re-ran D1")
        next_tick("a tick after daily_pipeline re-ran D1")
    finally:
        resources["hbase"].close()
    return story


def test_turning_automation_on_requests_nothing(ticks):
    assert ticks["automation turned on"] == {}


def test_a_daily_pipeline_run_is_not_repeated_by_automation(ticks):
    assert ticks["daily_pipeline ran D1"] == {}


def test_raw_events_of_a_day_alone_request_every_downstream_asset_of_that_day_only(ticks):
    assert ticks["raw_events D2 alone"] == {asset: [D2] for asset in DOWNSTREAM}


def test_once_the_requested_run_is_done_nothing_more_is_requested(ticks):
    assert ticks["requested run done"] == {}


def test_an_old_day_rerun_alone_also_refreshes_the_trim_windows_holding_it(ticks):
    """Not the identity chain of later days: those are re-run by a backfill when wanted."""
    assert ticks["raw_events D1 re-run alone"] == {
        **{asset: [D1] for asset in DOWNSTREAM},
        "trimmed_attributes": [D1, D2],
        "audience_sketches": [D1, D2],
    }


def test_an_old_days_recomputed_identity_and_profiles_do_not_cascade_into_later_days(ticks):
    assert ticks["the old day's requested run done"] == {}


def test_inputs_recorded_by_a_whole_days_run_request_no_second_run_of_that_day(ticks):
    """attribute_stats is in trimmed_attributes' trailing window of the same day."""
    assert ticks["raw_events and attribute_stats D2 recorded by a whole day's run"] == {}
    assert ticks["the rest of that whole day's run recorded"] == {}


def test_a_whole_day_rerun_refreshes_the_later_trim_windows_holding_it_a_tick_later(ticks):
    assert ticks["daily_pipeline re-ran D1"] == {}
    assert ticks["a tick after daily_pipeline re-ran D1"] == {
        "trimmed_attributes": [D2],
        "audience_sketches": [D2],
    }


def test_the_schedules_runs_are_tagged_as_whole_day_runs():
    tick = daily_schedule.evaluate_tick(
        build_schedule_context(scheduled_execution_time=datetime(2026, 11, 2, 3, tzinfo=UTC))
    )
    (request,) = tick.run_requests
    assert WHOLE_DAY_RUN_TAGS.items() <= request.tags.items()


def test_missing_earlier_days_do_not_hold_a_day_back(spark, tmp_path_factory):
    """D1 never materialized: D2's previous day and trim window are missing, D2 still runs."""
    resources = lake_resources(tmp_path_factory, "gap_lake")
    instance = DagsterInstance.ephemeral()
    first = evaluate_automation_conditions(defs=defs, instance=instance)
    raw_events_alone(D2, resources, instance)
    tick = evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
    assert requested(tick) == {asset: [D2] for asset in DOWNSTREAM}


def test_the_automation_sensor_is_on_by_default_over_every_automated_asset():
    assert automation_sensor.default_status == DefaultSensorStatus.RUNNING
    automated = {
        key.to_user_string()
        for key in automation_sensor.asset_selection.resolve(GRAPH)
        if GRAPH.get(key).automation_condition is not None
    }
    assert automated == DOWNSTREAM
    assert GRAPH.get(AssetKey("raw_events")).automation_condition is None  # landing sensor


def test_the_conditions_serialize_so_the_daemon_evaluates_them_without_user_code():
    for key in GRAPH.get_all_asset_keys():
        condition = GRAPH.get(key).automation_condition
        assert condition is None or condition.is_serializable, key
