"""``profiles run``: days from the command line as the UI runs them, empty days included."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from datetime import date
from pathlib import Path

import happybase
import pytest
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from profile_assets.run_days import PartitionOutOfRange, check_partitions, days_between
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.generator.lake import generate_lake
from profile_store.hbase_gateway.process import EmbeddedGateway

KEYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


def test_a_range_is_every_day_from_first_to_last():
    assert days_between(date(2026, 11, 1), date(2026, 11, 3)) == [
        date(2026, 11, 1),
        date(2026, 11, 2),
        date(2026, 11, 3),
    ]


def test_a_range_that_ends_before_it_starts_is_refused():
    with pytest.raises(PartitionOutOfRange, match="LAST_DAY 2026-11-01 is before DAY 2026-11-03"):
        days_between(date(2026, 11, 3), date(2026, 11, 1))


def test_days_outside_the_partitions_are_named_with_the_setting_to_change():
    with pytest.raises(PartitionOutOfRange) as refused:
        check_partitions([date(2017, 11, 6), date(2026, 11, 2)], KEYS)
    message = str(refused.value)
    assert message.startswith(
        "2017-11-06: not a day partition (partitions: 2026-11-01 .. 2026-11-03)"
    )
    assert "PROFILES_START_DATE" in message


def test_the_command_refuses_a_day_before_the_first_partition_with_exit_2(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "run", "2017-11-06"],
        cwd=tmp_path,
        env={**os.environ, "PROFILES_START_DATE": "2026-11-01"},
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 2
    assert "2017-11-06: not a day partition" in completed.stderr
    assert not (tmp_path / ".dagster_home").exists()  # nothing created for a refused range


@pytest.fixture(scope="module")
def two_days_one_empty(tmp_path_factory):
    """``profiles run`` over a landed day and a day that has only its ``_SUCCESS`` marker."""
    work = tmp_path_factory.mktemp("run_command")
    generate_lake(work / "generated", 1, 2_000, seed=3, start_date=date(2026, 11, 1))
    lake = work / "lake"
    shutil.copytree(work / "generated" / "landing", lake / "landing")
    (lake / "landing" / "date=2026-11-02").mkdir()
    (lake / "landing" / "date=2026-11-02" / "_SUCCESS").write_text("")
    env = {
        **os.environ,
        "PROFILES_LAKE_ROOT": str(lake),
        "PROFILES_HBASE_DATA_DIR": str(work / "hbase"),
        "PROFILES_START_DATE": "2026-11-01",
        "SPARK_SHUFFLE_PARTITIONS": "2",
    }
    env.pop("DAGSTER_HOME", None)
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "run", "2026-11-01", "2026-11-02"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return work, completed


def test_an_empty_day_builds_through_every_asset_and_check(two_days_one_empty):
    _, completed = two_days_one_empty
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-4000:]
    assert "2026-11-02: run" in completed.stdout and "every check passed" in completed.stdout


def test_the_runs_are_recorded_in_the_instance_it_created(two_days_one_empty):
    work, _ = two_days_one_empty
    home = work / ".dagster_home"
    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(RunsFilter(job_name="daily_pipeline"))
        assert sorted(run.tags["dagster/partition"] for run in runs) == KEYS[:2]
        assert {run.status for run in runs} == {DagsterRunStatus.SUCCESS}


def test_a_query_spanning_the_empty_day_answers(two_days_one_empty):
    work, _ = two_days_one_empty
    with EmbeddedGateway(Path(work / "hbase")) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        try:
            table = connection.table(SKETCH_TABLE)
            engine = AudienceEngine(lambda: contextlib.nullcontext(table))
            leaf = {"app_id": "com.shopfast.android", "event_type": "view_item"}
            day_1 = engine.estimate({**leaf, "date_from": KEYS[0], "date_to": KEYS[0]})
            both = engine.estimate({**leaf, "date_from": KEYS[0], "date_to": KEYS[1]})
        finally:
            connection.close()
    assert day_1.estimate > 0
    assert both.estimate == day_1.estimate
