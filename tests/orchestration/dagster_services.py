"""Dagster as users run it: ``dagster-webserver`` and ``dagster-daemon`` over ``workspace.yaml``.

Both start as real processes from the repository root with their own ``DAGSTER_HOME`` (an
instance file of the project's ``examples/``: the laptop's ``dagster.local.yaml`` unless a test
names another) and environment, so every run is launched the way the UI, a sensor, the schedule
or a backfill launches it: a queued run, dequeued by the daemon, executed by a run worker
process that imports the code location. Runs are launched through the
webserver's GraphQL API with the mutations the UI itself sends; outcomes are read back from the
instance's own storage.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from unittest import mock

import httpx
from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter
from webserver_wait import graphql

from profile_assets.definitions import daily_assets, defs
from profile_store.generator.lake import generate_lake

REPO = Path(__file__).resolve().parents[2]
LOCAL_INSTANCE = REPO / "examples" / "dagster.local.yaml"
WORKSPACE = REPO / "workspace.yaml"
PRODUCTION_INSTANCE = REPO / "examples" / "dagster.yaml"
BIN = Path(sys.executable).parent
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
WAITING = {DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED}
GRAPH = defs.get_repository_def().asset_graph
EVERY_ASSET = {key.to_user_string() for asset in daily_assets for key in asset.keys}

REPOSITORY_QUERY = """
query {
  workspaceOrError {
    ... on Workspace {
      locationEntries {
        name
        locationOrLoadError {
          __typename
          ... on PythonError { message }
          ... on RepositoryLocation { repositories { name } }
        }
      }
    }
  }
}
"""

LAUNCH_RUN = """
mutation ($params: ExecutionParams!) {
  launchRun(executionParams: $params) {
    __typename
    ... on LaunchRunSuccess { run { runId } }
    ... on PythonError { message stack }
    ... on RunConfigValidationInvalid { errors { message } }
    ... on InvalidSubsetError { message }
    ... on UnauthorizedError { message }
  }
}
"""

LAUNCH_BACKFILL = """
mutation ($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message stack }
    ... on PartitionSetNotFoundError { message }
    ... on InvalidStepError { invalidStepKey }
    ... on InvalidOutputError { invalidOutputName }
    ... on UnauthorizedError { message }
  }
}
"""

SENSOR_STATE = """
mutation ($selector: SensorSelector!) {
  startSensor(sensorSelector: $selector) {
    __typename
    ... on Sensor { sensorState { status } }
    ... on PythonError { message }
  }
}
"""

SENSOR_STATE_QUERY = """
query ($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor {
      sensorState { id status ticks(limit: 100) { status runKeys cursor timestamp } }
    }
  }
}
"""

STOP_SENSOR = """
mutation ($id: String!) {
  stopSensor(id: $id) {
    __typename
    ... on StopSensorMutationResult { instigationState { status } }
    ... on PythonError { message }
  }
}
"""

RUN_PAGE = """
query ($runId: ID!) {
  logsForRun(runId: $runId) {
    __typename
    ... on EventConnection {
      events {
        __typename
        ... on MessageEvent { message }
        ... on ExecutionStepFailureEvent { error { message causes { message } } }
        ... on RunFailureEvent { error { message causes { message } } }
        ... on LogsCapturedEvent { fileKey }
      }
    }
  }
}
"""

CAPTURED_LOGS = """
query ($logKey: [String!]!) {
  capturedLogs(logKey: $logKey) { stdout stderr }
}
"""

SCHEDULE_DRY_RUN = """
mutation ($selector: ScheduleSelector!, $timestamp: Float) {
  scheduleDryRun(selectorData: $selector, timestamp: $timestamp) {
    __typename
    ... on PythonError { message }
    ... on DryRunInstigationTick {
      evaluationResult {
        skipReason
        error { message }
        runRequests { runKey runConfigYaml tags { key value } }
      }
    }
  }
}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class RunFailed(AssertionError):
    """A run ended in anything but success; the message carries the run's own error text."""


class DagsterServices:
    """A webserver and a daemon over one instance directory; stop() ends both.

    ``instance_config`` is copied unchanged as the instance's ``dagster.yaml``; the settings it
    reads from the environment come from ``env``. Both load the code locations of ``workspace``.
    """

    def __init__(
        self,
        home: Path,
        env: dict[str, str],
        instance_config: Path = LOCAL_INSTANCE,
        workspace: Path = WORKSPACE,
    ):
        self.home = home
        self.workspace = workspace
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(home)}
        home.mkdir(parents=True, exist_ok=True)
        shutil.copy(instance_config, home / "dagster.yaml")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.lake: Path | None = None
        self.held_back: Path | None = None  # a generated landing day not landed yet
        self._processes: dict[str, subprocess.Popen] = {}
        self._logs: dict[str, Path] = {}
        self.location = ""
        self.repository = ""

    def land_held_back(self) -> None:
        shutil.copytree(self.held_back, self.lake / "landing" / self.held_back.name)

    # -- processes ------------------------------------------------------------------------

    def _start(self, name: str, command: list[str]) -> None:
        log_path = self.home / f"{name}.log"
        with log_path.open("wb") as log:
            # A session of its own: stop() ends the code servers, run workers and Spark JVMs
            # it starts with it (a run still in flight at the end would outlive it otherwise).
            self._processes[name] = subprocess.Popen(
                command,
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._logs[name] = log_path

    def log_tail(self, name: str, chars: int = 3000) -> str:
        path = self._logs.get(name)
        return path.read_text(errors="replace")[-chars:] if path and path.exists() else ""

    def start_webserver(self, timeout_s: float = 180) -> None:
        self._start(
            "webserver",
            [str(BIN / "dagster-webserver"), "-w", str(self.workspace), "-h", "127.0.0.1"]
            + ["-p", str(self.port)],
        )
        deadline = time.monotonic() + timeout_s
        while True:
            if self._processes["webserver"].poll() is not None:
                raise AssertionError(f"webserver exited:\n{self.log_tail('webserver')}")
            try:
                if httpx.get(f"{self.url}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"webserver did not answer:\n{self.log_tail('webserver')}")
            time.sleep(0.5)
        (entry,) = self.graphql(REPOSITORY_QUERY)["workspaceOrError"]["locationEntries"]
        loaded = entry["locationOrLoadError"]
        assert loaded["__typename"] == "RepositoryLocation", loaded
        self.location = entry["name"]
        self.repository = loaded["repositories"][0]["name"]

    def start_daemon(self) -> None:
        self._start("daemon", [str(BIN / "dagster-daemon"), "run", "-w", str(self.workspace)])

    def stop(self) -> None:
        for process in self._processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self._processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    # -- GraphQL --------------------------------------------------------------------------

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        return graphql(self.url, query, variables)

    def _repository_selector(self) -> dict:
        return {"repositoryLocationName": self.location, "repositoryName": self.repository}

    def launch_job_run(self, job: str, partition: str, run_config: dict | None = None) -> str:
        """A partitioned run of a job, as the job page's launchpad sends it."""
        params = {
            "selector": {**self._repository_selector(), "jobName": job},
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
        }
        if run_config is not None:
            params["runConfigData"] = run_config
        return self._launched(self.graphql(LAUNCH_RUN, {"params": params})["launchRun"])

    def launch_asset_run(
        self, assets: Iterable[str], partition: str, with_checks: bool = False
    ) -> str:
        """Materialize assets of one partition, as the asset page's button sends it (with
        ``with_checks``, as the asset graph's *Materialize all* does: their checks too)."""
        names = set(assets)
        keys = [{"path": [name]} for name in sorted(names)]
        checks = [
            {"assetKey": {"path": [key.asset_key.to_user_string()]}, "name": key.name}
            for key in sorted(GRAPH.asset_check_keys, key=str)
            if with_checks and key.asset_key.to_user_string() in names
        ]
        params = {
            "selector": {
                **self._repository_selector(),
                "jobName": "__ASSET_JOB",
                "assetSelection": keys,
                "assetCheckSelection": checks,
            },
            "executionMetadata": {"tags": [{"key": "dagster/partition", "value": partition}]},
        }
        return self._launched(self.graphql(LAUNCH_RUN, {"params": params})["launchRun"])

    def _launched(self, result: dict) -> str:
        assert result["__typename"] == "LaunchRunSuccess", result
        return result["run"]["runId"]

    def launch_job_backfill(self, job: str, partitions: list[str]) -> str:
        """A backfill of a partitioned job, as its Partitions tab's 'Launch backfill' sends it."""
        params = {
            "selector": {
                "partitionSetName": f"{job}_partition_set",
                "repositorySelector": self._repository_selector(),
            },
            "partitionNames": partitions,
        }
        result = self.graphql(LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
        assert result["__typename"] == "LaunchBackfillSuccess", result
        return result["backfillId"]

    def start_sensor(self, name: str) -> None:
        selector = {**self._repository_selector(), "sensorName": name}
        result = self.graphql(SENSOR_STATE, {"selector": selector})["startSensor"]
        assert result["__typename"] == "Sensor", result
        assert result["sensorState"]["status"] == "RUNNING", result

    def sensor_state(self, name: str) -> dict:
        """The sensor's state as its page shows it: status and ticks (newest first)."""
        selector = {**self._repository_selector(), "sensorName": name}
        sensor = self.graphql(SENSOR_STATE_QUERY, {"selector": selector})["sensorOrError"]
        assert sensor["__typename"] == "Sensor", sensor
        return sensor["sensorState"]

    def wait_for_ticks(self, name: str, count: int, after: float, timeout_s: float = 300) -> list:
        """The sensor's ticks (newest first) once ``count`` of them began after ``after``."""
        deadline = time.monotonic() + timeout_s
        while True:
            ticks = [t for t in self.sensor_state(name)["ticks"] if t["timestamp"] > after]
            if len(ticks) >= count:
                return ticks
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{name}: {len(ticks)}/{count} ticks after {timeout_s:.0f} s\n"
                    f"daemon log:\n{self.log_tail('daemon')}"
                )
            time.sleep(1)

    def stop_sensor(self, name: str) -> None:
        state = self.sensor_state(name)
        result = self.graphql(STOP_SENSOR, {"id": state["id"]})["stopSensor"]
        assert result["__typename"] == "StopSensorMutationResult", result
        assert result["instigationState"]["status"] == "STOPPED", result

    def schedule_tick_run_requests(self, schedule: str, at_timestamp: float) -> list[dict]:
        """Evaluate the schedule's tick at a time, as the UI's 'Test schedule' dialog does."""
        selector = {**self._repository_selector(), "scheduleName": schedule}
        tick = self.graphql(SCHEDULE_DRY_RUN, {"selector": selector, "timestamp": at_timestamp})[
            "scheduleDryRun"
        ]
        assert tick["__typename"] == "DryRunInstigationTick", tick
        result = tick["evaluationResult"]
        assert result["error"] is None, result["error"]
        return result["runRequests"]

    def launch_run_request(self, job: str, request: dict) -> str:
        """Launch one evaluated run request, as the 'Test schedule' dialog's launch button."""
        params = {
            "selector": {**self._repository_selector(), "jobName": job},
            "runConfigData": request["runConfigYaml"],
            "executionMetadata": {"tags": request["tags"]},
        }
        return self._launched(self.graphql(LAUNCH_RUN, {"params": params})["launchRun"])

    def run_page(self, run_id: str) -> tuple[list[str], str]:
        """What the run page shows: its event messages with their errors, and captured stderr."""
        result = self.graphql(RUN_PAGE, {"runId": run_id})["logsForRun"]
        assert result["__typename"] == "EventConnection", result
        messages, stderr = [], []
        for event in result["events"]:
            messages.append(event.get("message") or "")
            if event.get("error"):
                messages.append(event["error"]["message"])
                messages.extend(cause["message"] for cause in event["error"]["causes"])
            if event["__typename"] == "LogsCapturedEvent":
                logs = self.graphql(
                    CAPTURED_LOGS, {"logKey": [run_id, "compute_logs", event["fileKey"]]}
                )
                stderr.append(logs["capturedLogs"]["stderr"] or "")
        return messages, "".join(stderr)

    # -- outcomes, read from the instance's storage -----------------------------------------

    def instance(self) -> DagsterInstance:
        # The file's `env:` settings (the production instance's DAGSTER_PG_*) are resolved
        # here, from the services' environment.
        with mock.patch.dict(os.environ, self.env):
            return DagsterInstance.from_config(str(self.home))

    def wait_for_start(self, filters: RunsFilter, timeout_s: float = 300) -> str:
        """The first run matching ``filters`` once the daemon has taken it off the queue."""
        deadline = time.monotonic() + timeout_s
        with self.instance() as instance:
            while True:
                left = [r for r in instance.get_runs(filters=filters) if r.status not in WAITING]
                if left:
                    return left[-1].run_id
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"no run left the queue after {timeout_s:.0f} s\n"
                        f"daemon log:\n{self.log_tail('daemon')}"
                    )
                time.sleep(0.5)

    def wait_for_runs(
        self, filters: RunsFilter, count: int, timeout_s: float = 600, must_succeed: bool = True
    ) -> list[str]:
        """Wait until ``count`` runs matching ``filters`` exist and have all finished.

        A run that did not succeed raises ``RunFailed`` with its error events and the tail of
        the daemon's log (unless ``must_succeed`` is false).
        """
        deadline = time.monotonic() + timeout_s
        with self.instance() as instance:
            while True:
                runs = instance.get_runs(filters=filters)
                done = [run for run in runs if run.status in FINISHED]
                for run in done:
                    if must_succeed and run.status != DagsterRunStatus.SUCCESS:
                        raise RunFailed(self.explain(instance, run.run_id))
                if len(done) >= count:
                    return [run.run_id for run in done]
                if time.monotonic() > deadline:
                    states = {run.run_id: run.status.value for run in runs}
                    raise AssertionError(
                        f"{len(done)}/{count} runs finished after {timeout_s:.0f} s: {states}\n"
                        f"daemon log:\n{self.log_tail('daemon')}"
                    )
                time.sleep(1)

    def event_time(self, run_id: str, event_type: DagsterEventType) -> float:
        """When the run's (first) event of ``event_type`` was written."""
        with self.instance() as instance:
            records = instance.all_logs(run_id, of_type=event_type)
        assert records, f"run {run_id} has no {event_type.value} event"
        return records[0].timestamp

    def materialized(self, run_id: str) -> set[str]:
        """The assets the run materialized."""
        with self.instance() as instance:
            return {
                record.dagster_event.asset_key.to_user_string()
                for record in instance.all_logs(
                    run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
                )
            }

    def materialized_partitions(self, run_id: str) -> set[tuple[str, str]]:
        """(asset, partition) of every materialization of the run (a backfill run may hold
        several days)."""
        with self.instance() as instance:
            return {
                (record.dagster_event.asset_key.to_user_string(), record.dagster_event.partition)
                for record in instance.all_logs(
                    run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
                )
            }

    def check_evaluations(self, run_id: str) -> list:
        """Each asset check evaluation the run recorded."""
        with self.instance() as instance:
            records = instance.all_logs(run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
            return [record.dagster_event.event_specific_data for record in records]

    def check_outcomes(self, run_id: str) -> dict[str, bool]:
        """Each asset check the run evaluated, and whether it passed."""
        return {e.check_name: e.passed for e in self.check_evaluations(run_id)}

    def check_failures(self, run_id: str) -> dict[str, str]:
        """Each asset check of the run that did not pass, with its description and metadata."""
        return {
            e.check_name: f"{e.description} { ({k: v.value for k, v in e.metadata.items()}) }"
            for e in self.check_evaluations(run_id)
            if not e.passed
        }

    def explain_run(self, run_id: str) -> str:
        with self.instance() as instance:
            return self.explain(instance, run_id)

    def explain(self, instance: DagsterInstance, run_id: str) -> str:
        """The run's status and every error the run page shows, with the daemon's log tail."""
        run = instance.get_run_by_id(run_id)
        lines = [f"run {run_id} ({run.job_name}, {dict(run.tags)}) ended {run.status.value}"]
        for record in instance.all_logs(run_id):
            event = record.dagster_event
            error = None
            if event is not None and event.event_type in (
                DagsterEventType.RUN_FAILURE,
                DagsterEventType.STEP_FAILURE,
                DagsterEventType.ENGINE_EVENT,
            ):
                data = event.event_specific_data
                error = getattr(data, "error", None)
            if error is not None or (event and event.event_type == DagsterEventType.RUN_FAILURE):
                lines.append(f"{record.user_message}")
                if error is not None:
                    lines.append(error.to_string())
        lines.append(f"daemon log:\n{self.log_tail('daemon')}")
        return "\n".join(lines)


def over_generated_lake(
    tmp_path_factory,
    days: list[str],
    events_per_day: int,
    seed: int,
    env: dict[str, str] | None = None,
    instance_config: Path = LOCAL_INSTANCE,
    hold_back_last: bool = True,
    answer_key: bool = True,
    workspace: Path = WORKSPACE,
) -> DagsterServices:
    """Services (not started) over a generated lake of ``days``, landed but for the last one
    with ``hold_back_last`` (``land_held_back()`` lands it), with the generator's answer key
    (``ground_truth/``, for the identity check) unless ``answer_key`` is false. The daemon
    evaluates sensors every 5 s."""
    generated = tmp_path_factory.mktemp("generated")
    generate_lake(
        generated, len(days), events_per_day, seed=seed, start_date=date.fromisoformat(days[0])
    )
    lake = tmp_path_factory.mktemp("lake")
    (lake / "landing").mkdir()
    if answer_key:
        shutil.copytree(generated / "ground_truth", lake / "ground_truth")
    for day in days[:-1] if hold_back_last else days:
        shutil.copytree(generated / "landing" / f"date={day}", lake / "landing" / f"date={day}")
    services = DagsterServices(
        tmp_path_factory.mktemp("dagster_home"),
        {
            "PROFILES_LAKE_ROOT": str(lake),
            "PROFILES_HBASE_DATA_DIR": str(tmp_path_factory.mktemp("hbase")),
            "SPARK_SHUFFLE_PARTITIONS": "2",
            "PROFILES_SENSOR_INTERVAL_SECONDS": "5",
            **(env or {}),
        },
        instance_config,
        workspace,
    )
    services.lake = lake
    if hold_back_last:
        services.held_back = generated / "landing" / f"date={days[-1]}"
    return services


def assert_complete(dagster: DagsterServices, run_id: str, assets: set[str]) -> None:
    """The run materialized ``assets`` and every check of them ran and passed.

    (Outside a test module pytest does not rewrite asserts: each says what it compared.)
    """
    assert dagster.materialized(run_id) == assets, dagster.explain_run(run_id)
    checks = set(dagster.check_outcomes(run_id))
    expected = {
        key.name for key in GRAPH.asset_check_keys if key.asset_key.to_user_string() in assets
    }
    assert checks == expected, f"run {run_id} evaluated {sorted(checks)}, not {sorted(expected)}"
    failures = dagster.check_failures(run_id)
    assert failures == {}, f"run {run_id}: checks failed: {failures}"
