"""The production instance, ``examples/dagster.yaml`` exactly as shipped, on a real PostgreSQL.

A throwaway PostgreSQL cluster (``postgres_cluster``: Debian's ``postgresql`` package), the
file's ``DAGSTER_PG_*`` variables pointing at it, and a ``dagster-webserver`` and
``dagster-daemon`` over it (``dagster_services``) on a lake of one landed day. The tests run in
file order, each on what the previous ones did:

1. the landing sensor (on, as shipped) launches a run of the landed day, which the daemon takes
   off the queue;
2. while that run runs, the same day's ``raw_events`` is launched through the webserver's
   GraphQL, as the asset page's button does: the second run waits in the queue until the first
   has ended (the file's one run of the code location at a time), then runs (one asset: the
   queue holds any run alike, and a second whole day would add minutes to the suite, nothing to
   the test);
3. both runs succeed: the sensor's with every asset and check, the second with its asset;
4. the runs and their event logs are in PostgreSQL, not in files under ``$DAGSTER_HOME``;
5. the steps' captured stdout and stderr are under ``DAGSTER_COMPUTE_LOGS_DIR``;
6. the instance the daemon runs on has the file's run monitoring, run retries, queue retries
   and code-server timeouts, and the daemon runs the monitoring and retry daemons they turn on.

No sensor is switched while the daemon runs (here a stop sent right after a tick was once lost,
the sensor ticking on), so the automation sensor, which would add runs the tests do not look at,
is switched off before the daemon starts. The lake has no answer key (``ground_truth/``), as in
production: the identity check passes with its note; ``test_launched_runs`` measures identity
quality against one. Without PostgreSQL's server binaries the module fails (never skips) with a
line naming the package to install.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterRunStatus, RunsFilter
from dagster_services import (
    EVERY_ASSET,
    PRODUCTION_INSTANCE,
    assert_complete,
    over_generated_lake,
)
from postgres_cluster import PostgresMissing, server_bindir

DAY = "2026-11-01"
EVENTS_PER_DAY = 500
LANDING_SENSOR_RUNS = RunsFilter(tags={"dagster/sensor_name": "landing_sensor"})


@pytest.fixture(scope="module")
def dagster(tmp_path_factory, production_env):
    """Webserver and daemon on the production instance over one landed day."""
    services = over_generated_lake(
        tmp_path_factory,
        [DAY],
        EVENTS_PER_DAY,
        seed=11,
        env=production_env,
        instance_config=PRODUCTION_INSTANCE,
        hold_back_last=False,
        answer_key=False,
    )
    try:
        services.start_webserver()
        services.stop_sensor("automation_sensor")
        services.start_daemon()
        yield services
    finally:
        services.stop()


def test_without_the_server_binaries_the_message_names_the_package_to_install(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(PostgresMissing) as missing:
        server_bindir(debian_bindirs=str(tmp_path / "*" / "bin"))
    assert "apt-get install -y postgresql" in str(missing.value)
    assert "\n" not in str(missing.value)


def test_the_landing_sensor_launches_a_run_of_the_landed_day(dagster):
    run_id = dagster.wait_for_start(LANDING_SENSOR_RUNS)
    with dagster.instance() as instance:
        assert instance.get_run_by_id(run_id).tags["dagster/partition"] == DAY
    dagster.sensor_run = run_id


def test_a_run_launched_through_the_webserver_waits_queued_while_the_first_runs(dagster):
    launched = dagster.launch_asset_run(["raw_events"], DAY)
    dagster.launched_run = launched
    first = dagster.sensor_run
    # A whole day on a busy 2-core host has taken more than the default 10 minutes.
    dagster.wait_for_runs(RunsFilter(run_ids=[first, launched]), 2, timeout_s=1800)
    first_ended = dagster.event_time(first, DagsterEventType.RUN_SUCCESS)
    queued = dagster.event_time(launched, DagsterEventType.RUN_ENQUEUED)
    dequeued = dagster.event_time(launched, DagsterEventType.RUN_STARTING)
    assert queued < first_ended, "the second run was launched after the first ended"
    assert dequeued >= first_ended, (
        f"the second run left the queue {first_ended - dequeued:.1f} s before the first ended"
    )


def test_the_sensors_run_and_the_launched_run_succeed(dagster):
    with dagster.instance() as instance:
        runs = {
            run_id: instance.get_run_by_id(run_id)
            for run_id in (dagster.sensor_run, dagster.launched_run)
        }
    assert {run.status for run in runs.values()} == {DagsterRunStatus.SUCCESS}
    assert_complete(dagster, dagster.sensor_run, EVERY_ASSET)
    assert dagster.materialized(dagster.launched_run) == {"raw_events"}


def test_runs_and_event_logs_are_kept_in_postgres(dagster, postgres):
    with closing(postgres.connect()) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT run_id, status FROM runs")
        runs = dict(cursor.fetchall())
        cursor.execute(
            "SELECT DISTINCT run_id FROM event_logs WHERE dagster_event_type = %s",
            (DagsterEventType.RUN_SUCCESS.value,),
        )
        succeeded = {row[0] for row in cursor.fetchall()}
    assert runs == {dagster.sensor_run: "SUCCESS", dagster.launched_run: "SUCCESS"}
    assert succeeded == set(runs)
    assert not list(dagster.home.glob("**/*.db"))


def test_the_steps_logs_are_kept_under_the_compute_logs_directory(dagster):
    directory = Path(dagster.env["DAGSTER_COMPUTE_LOGS_DIR"])
    for run_id in (dagster.sensor_run, dagster.launched_run):
        captured = [path for path in (directory / run_id).rglob("*") if path.is_file()]
        assert captured, f"no captured logs of run {run_id} under {directory}"
    assert not list((dagster.home / "storage").rglob("*.err"))


def test_the_instance_has_the_files_monitoring_retries_and_code_server_timeouts(dagster):
    with dagster.instance() as instance:
        monitoring = (
            instance.run_monitoring_enabled,
            instance.run_monitoring_start_timeout_seconds,
            instance.run_monitoring_cancel_timeout_seconds,
            instance.run_monitoring_max_resume_run_attempts,
        )
        retries = (
            instance.run_retries_enabled,
            instance.run_retries_max_retries,
            instance.run_retries_retry_on_asset_or_op_failure,
        )
        queue = instance.get_concurrency_config().run_queue_config
        code_servers = (
            instance.code_server_process_startup_timeout,
            instance.code_server_reload_timeout,
        )
        daemons = set(instance.get_daemon_heartbeats())
    assert monitoring == (True, 600, 300, 0)
    assert retries == (True, 2, False)
    assert (queue.max_user_code_failure_retries, queue.user_code_failure_retry_delay) == (3, 60)
    assert code_servers == (600, 600)
    assert {"MONITORING", "EVENT_LOG_CONSUMER"} <= daemons
