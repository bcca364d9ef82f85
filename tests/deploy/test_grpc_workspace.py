"""A deployment's Dagster: the webserver and the daemon over ``deploy/workspace.grpc.yaml``,
the code location served by a code server of its own, ``dagster api grpc -m
profile_assets.definitions``, started apart from them as a deployment starts it.

One code server, one webserver and one daemon, real processes over one instance directory
(``dagster_services``). A run of ``erasure_job`` (no request pending: the run does no Spark
work, and takes seconds) is launched through the webserver's GraphQL, as the job page's
launchpad sends it: the webserver could launch it only with the location loaded from the code
server, the daemon took it off the queue and had the code server start its run worker, and the
run succeeded. Neither the webserver nor the daemon started a code server of its own (with the
laptop's ``workspace.yaml`` each starts one as its child process).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from dagster import DagsterRunStatus, RunsFilter
from dagster._core.remote_origin import GrpcServerCodeLocationOrigin
from dagster_services import BIN, LAUNCH_RUN, REPO, DagsterServices, free_port

GRPC_WORKSPACE = REPO / "deploy" / "workspace.grpc.yaml"
LOCATION = "profile_assets.definitions"


class CodeServerServices(DagsterServices):
    """The webserver and daemon over the deployment's workspace, and the code server it names."""

    def start_code_server(self, timeout_s: float = 180) -> None:
        port = self.env["DAGSTER_CODE_SERVER_PORT"]
        self._start(
            "code-server",
            [str(BIN / "dagster"), "api", "grpc", "-m", LOCATION, "-h", "127.0.0.1", "-p", port],
        )
        deadline = time.monotonic() + timeout_s
        health = [str(BIN / "dagster"), "api", "grpc-health-check", "-p", port]
        while subprocess.run(health, capture_output=True, env=self.env).returncode != 0:
            if self._processes["code-server"].poll() is not None:
                raise AssertionError(f"code server exited:\n{self.log_tail('code-server')}")
            if time.monotonic() > deadline:
                raise AssertionError(f"code server not serving:\n{self.log_tail('code-server')}")
            time.sleep(1)

    def pid(self, name: str) -> int:
        return self._processes[name].pid


def descendants(pid: int) -> list[str]:
    """The command lines of every process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    command_lines: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            child = int(stat.parent.name)
            command_lines[child] = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
        except (OSError, IndexError):  # the process ended while it was read
            continue
        children.setdefault(int(fields[1]), []).append(child)
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(command_lines[child].decode(errors="replace"))
        todo.extend(children.get(child, []))
    return found


@pytest.fixture(scope="module")
def dagster(tmp_path_factory):
    lake = tmp_path_factory.mktemp("lake")
    services = CodeServerServices(
        tmp_path_factory.mktemp("dagster_home"),
        {
            "PROFILES_LAKE_ROOT": str(lake),
            "PROFILES_HBASE_DATA_DIR": str(tmp_path_factory.mktemp("hbase")),
            "DAGSTER_CODE_SERVER_HOST": "127.0.0.1",
            "DAGSTER_CODE_SERVER_PORT": str(free_port()),
        },
        workspace=GRPC_WORKSPACE,
    )
    try:
        services.start_code_server()
        services.start_webserver()
        services.start_daemon()
        yield services
    finally:
        services.stop()


def test_the_webserver_loads_the_location_from_the_code_server(dagster):
    assert dagster.location == LOCATION


def test_a_run_launched_through_the_webserver_succeeds_through_the_code_server(dagster):
    params = {"selector": {**dagster._repository_selector(), "jobName": "erasure_job"}}
    run_id = dagster._launched(dagster.graphql(LAUNCH_RUN, {"params": params})["launchRun"])
    dagster.wait_for_runs(RunsFilter(run_ids=[run_id]), count=1, timeout_s=300)
    with dagster.instance() as instance:
        run = instance.get_run_by_id(run_id)
    assert run.status == DagsterRunStatus.SUCCESS
    origin = run.remote_job_origin.repository_origin.code_location_origin
    assert isinstance(origin, GrpcServerCodeLocationOrigin), origin
    assert origin.port == int(dagster.env["DAGSTER_CODE_SERVER_PORT"])


def test_neither_the_webserver_nor_the_daemon_starts_a_code_server(dagster):
    started = descendants(dagster.pid("webserver")) + descendants(dagster.pid("daemon"))
    assert not [command for command in started if "api grpc" in command], started
