"""The landing sensor requests exactly the day partitions whose complete files changed.

Each tick is evaluated as the code location's sensor, with the definitions it is loaded in: the
sensor reads the days ``daily_pipeline`` has partitions for from them. The last test ticks it as
the daemon does, over the code location served by its own code server.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    MaterializeResult,
    RunsFilter,
    SkipReason,
    asset,
    build_sensor_context,
    materialize,
)
from dagster._core.test_utils import create_test_daemon_workspace_context, instance_for_test
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.sensor import execute_sensor_iteration

from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS
from profile_assets.definitions import defs
from profile_assets.partitions import daily_partitions
from profile_store.erasure.lake_rewrite import LANDING_REWRITES
from profile_store.lake.landing_watch import complete_days
from profile_store.lake.layout import day_dir
from profile_store.lake.storage import LocalLakeStorage
from resources.lake import LakeResource
from sensors.landing_sensor import DAILY_JOB, landing_sensor

REPO = Path(__file__).resolve().parents[2]
# Runs wait in the queue (no daemon dequeues them): the test reads them, nothing executes them.
QUEUED_RUNS = {
    "run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}
}


def land(root, day: str, part: int, mtime: float) -> None:
    directory = root / "landing" / f"date={day}"
    directory.mkdir(parents=True, exist_ok=True)
    data = directory / f"part-{part:05d}.jsonl.gz"
    data.write_bytes(b"{}")
    os.utime(data, (mtime, mtime))
    marker = directory / "_SUCCESS"
    marker.write_bytes(b"")
    os.utime(marker, (mtime + 1, mtime + 1))


def evaluate(root, cursor=None, instance=None):
    """One tick: its requests and skip reasons, and the cursor it leaves (on ``instance``, left
    open for more ticks, or on an ephemeral one)."""
    if instance is None:
        with DagsterInstance.ephemeral() as ephemeral:
            return evaluate(root, cursor, ephemeral)
    context = build_sensor_context(
        instance=instance,
        cursor=cursor,
        definitions=defs,
        resources={"lake": LakeResource(root=str(root))},
    )
    result = list(landing_sensor(context) or [])
    return result, context.cursor


def ingest_in_a_run(instance, day: str, digest: str, succeed: bool = True) -> None:
    """A run (not the sensor's) whose raw_events of ``day`` read files with ``digest``; with
    ``succeed=False`` a later step of the run fails."""

    @asset(name="raw_events", partitions_def=daily_partitions)
    def stand_in():
        return MaterializeResult(metadata={"landing_digest": digest})

    @asset(deps=[stand_in], partitions_def=daily_partitions)
    def downstream():
        if not succeed:
            raise RuntimeError("a step after raw_events failed")

    materialize([stand_in, downstream], partition_key=day, instance=instance, raise_on_error=False)


def run_of_the_day(
    instance, day: str, status: DagsterRunStatus, assets: list[str] | None = None
) -> DagsterRun:
    """A run record of ``day`` in ``status``, as the UI, a backfill or the sensor leaves it: of
    ``daily_pipeline``, or with ``assets`` of the asset graph's job materializing those."""
    job_name = DAILY_JOB if assets is None else "__ASSET_JOB"
    return instance.add_run(
        DagsterRun(
            job_name=job_name,
            run_id=f"run-of-{day}-{job_name}",
            status=status,
            tags={"dagster/partition": day},
            asset_selection=None if assets is None else frozenset(map(AssetKey, assets)),
        )
    )


def test_each_new_complete_day_gets_one_run_request(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    land(tmp_path, "2026-11-02", 0, 100)
    requests, cursor = evaluate(tmp_path)
    assert [r.partition_key for r in requests] == ["2026-11-01", "2026-11-02"]
    assert set(json.loads(cursor)) == {"2026-11-01", "2026-11-02"}


def test_files_seen_once_never_trigger_again(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    _, cursor = evaluate(tmp_path)
    requests, _ = evaluate(tmp_path, cursor)
    assert len(requests) == 1 and isinstance(requests[0], SkipReason)


def test_late_data_for_an_old_day_triggers_that_day_only(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    land(tmp_path, "2026-11-02", 0, 100)
    _, cursor = evaluate(tmp_path)
    land(tmp_path, "2026-11-01", 1, 500)
    requests, _ = evaluate(tmp_path, cursor)
    assert [r.partition_key for r in requests] == ["2026-11-01"]
    assert requests[0].run_key.startswith("2026-11-01:")


def test_a_day_that_is_not_a_partition_yet_is_retried_later(tmp_path):
    land(tmp_path, "2099-01-01", 0, 100)
    requests, cursor = evaluate(tmp_path)
    assert requests == []
    assert "2099-01-01" not in json.loads(cursor or "{}")


def test_days_a_successful_run_ingested_from_the_same_files_are_not_run_again(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    land(tmp_path, "2026-11-02", 0, 100)
    digests = {
        day: entry.digest for day, entry in complete_days(LocalLakeStorage(tmp_path)).items()
    }
    with DagsterInstance.ephemeral() as instance:
        ingest_in_a_run(instance, "2026-11-01", digests["2026-11-01"])
        requests, cursor = evaluate(tmp_path, instance=instance)
    assert [r.partition_key for r in requests] == ["2026-11-02"]
    assert set(json.loads(cursor)) == {"2026-11-01", "2026-11-02"}


def test_a_day_whose_files_changed_after_its_run_is_run_again(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    digest = complete_days(LocalLakeStorage(tmp_path))["2026-11-01"].digest
    land(tmp_path, "2026-11-01", 1, 500)
    with DagsterInstance.ephemeral() as instance:
        ingest_in_a_run(instance, "2026-11-01", digest)
        requests, _ = evaluate(tmp_path, instance=instance)
    assert [r.partition_key for r in requests] == ["2026-11-01"]


def test_a_day_whose_run_failed_is_run_again(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    digest = complete_days(LocalLakeStorage(tmp_path))["2026-11-01"].digest
    with DagsterInstance.ephemeral() as instance:
        ingest_in_a_run(instance, "2026-11-01", digest, succeed=False)
        requests, _ = evaluate(tmp_path, instance=instance)
    assert [r.partition_key for r in requests] == ["2026-11-01"]


def test_a_day_whose_files_the_erasure_step_rewrote_is_not_run_again(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    _, cursor = evaluate(tmp_path)
    storage = LocalLakeStorage(tmp_path)
    before = complete_days(storage)["2026-11-01"].digest
    # The same file, rewritten shorter (without a person's lines), then its marker again.
    (tmp_path / "landing" / "date=2026-11-01" / "part-00000.jsonl.gz").write_bytes(b"")
    (tmp_path / "landing" / "date=2026-11-01" / "_SUCCESS").write_bytes(b"")
    digest = complete_days(storage)["2026-11-01"].digest
    assert digest != before
    storage.write_bytes(day_dir(LANDING_REWRITES, "2026-11-01"), digest.encode())
    requests, cursor = evaluate(tmp_path, cursor)
    assert requests == []
    assert json.loads(cursor)["2026-11-01"] == digest


def test_a_day_with_a_run_of_the_daily_job_in_progress_is_skipped_and_not_marked_seen(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    land(tmp_path, "2026-11-02", 0, 100)
    with DagsterInstance.ephemeral() as instance:
        run_of_the_day(instance, "2026-11-01", DagsterRunStatus.STARTED)
        requests, cursor = evaluate(tmp_path, instance=instance)
    assert [r.partition_key for r in requests] == ["2026-11-02"]
    assert set(json.loads(cursor)) == {"2026-11-02"}


def test_a_run_of_raw_events_alone_not_started_yet_holds_its_day_and_the_skip_says_why(
    tmp_path,
):
    land(tmp_path, "2026-11-01", 0, 100)
    with DagsterInstance.ephemeral() as instance:
        run_of_the_day(instance, "2026-11-01", DagsterRunStatus.NOT_STARTED, ["raw_events"])
        (skip,), cursor = evaluate(tmp_path, instance=instance)
    assert isinstance(skip, SkipReason)
    assert "2026-11-01 (run run-of-2026-11-01-__ASSET_JOB)" in skip.skip_message
    assert "2026-11-01" not in json.loads(cursor)


def test_a_run_of_other_assets_of_the_day_does_not_hold_it(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    with DagsterInstance.ephemeral() as instance:
        run_of_the_day(instance, "2026-11-01", DagsterRunStatus.STARTED, ["attribute_stats"])
        requests, _ = evaluate(tmp_path, instance=instance)
    assert [r.partition_key for r in requests] == ["2026-11-01"]


def test_a_day_held_by_a_run_that_then_ended_without_ingesting_it_is_run_next_tick(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    with DagsterInstance.ephemeral() as instance:
        run = run_of_the_day(instance, "2026-11-01", DagsterRunStatus.STARTED)
        held, cursor = evaluate(tmp_path, instance=instance)
        instance.report_run_canceled(run)
        requests, _ = evaluate(tmp_path, cursor, instance=instance)
    assert isinstance(held[0], SkipReason)
    assert [r.partition_key for r in requests] == ["2026-11-01"]


def test_files_that_changed_while_a_run_ingested_the_day_are_run_after_it(tmp_path):
    land(tmp_path, "2026-11-01", 0, 100)
    read_by_the_run = complete_days(LocalLakeStorage(tmp_path))["2026-11-01"].digest
    with DagsterInstance.ephemeral() as instance:
        ingest_in_a_run(instance, "2026-11-01", read_by_the_run)
        run = run_of_the_day(instance, "2026-11-01", DagsterRunStatus.STARTED)
        land(tmp_path, "2026-11-01", 1, 500)
        held, cursor = evaluate(tmp_path, instance=instance)
        instance.report_run_canceled(run)
        requests, _ = evaluate(tmp_path, cursor, instance=instance)
    assert isinstance(held[0], SkipReason)
    assert [r.partition_key for r in requests] == ["2026-11-01"]
    assert requests[0].run_key != f"2026-11-01:{read_by_the_run}"


def test_a_run_the_daemon_launches_from_its_request_carries_the_whole_day_tags_of_the_job(
    tmp_path, monkeypatch
):
    """The request names no whole-day tag: Dagster merges the job's tags into the run."""
    land(tmp_path, "2026-11-01", 0, 100)
    monkeypatch.setenv("PROFILES_LAKE_ROOT", str(tmp_path))
    location = ModuleTarget(
        module_name="profile_assets.definitions",
        attribute=None,
        working_directory=str(REPO),
        location_name=None,
    )
    with (
        instance_for_test(overrides=QUEUED_RUNS) as instance,
        create_test_daemon_workspace_context(location, instance) as workspace,
    ):
        list(execute_sensor_iteration(workspace, logging.getLogger(__name__), None, None))
        (run,) = instance.get_runs(RunsFilter(tags={"dagster/sensor_name": "landing_sensor"}))
    assert run.job_name == DAILY_JOB
    assert run.tags["dagster/partition"] == "2026-11-01"
    assert WHOLE_DAY_RUN_TAGS.items() <= run.tags.items()
