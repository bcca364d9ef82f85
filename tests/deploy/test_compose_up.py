"""``docs/deploying.md`` steps 9 to 11 as an operator runs them: ``podman-compose up`` of
``deploy/compose.yaml`` from the repository's image, over a PostgreSQL server and an Apache
Kafka broker of this machine, the embedded gateway of the compose file as HBase, and the lake in
the compose file's volume.

Every service's own health check (``podman healthcheck run``) passes; a day landed in the lake
is run by the landing sensor through the code server, the webserver lists the successful run,
and the service's health check, which waits for the sketch table, passes after it.

The ports are the compose file's variables, each a free port here, so that the platform of this
test shares the host's network with the rest of the suite.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dagster_services import free_port
from image_build import PODMAN_GLOBAL_OPTIONS, REPO, host_limits, podman
from postgres_cluster import postgres_or_fail

from profile_store.launchers.kafka_broker import KafkaBroker, KafkaStartError

COMPOSE_FILE = REPO / "deploy" / "compose.yaml"
# The dev extra's podman-compose (docs/deploying.md, step 1).
PODMAN_COMPOSE = Path(sys.executable).parent / "podman-compose"
SERVICES = ("code-server", "webserver", "daemon", "serve", "hbase-gateway")
SERVICES += ("lake-sink", "live-profiles")
DAY = "2026-11-01"
# Bounds for a machine under the whole suite's load, not speeds: starting seven JVM-less Python
# services, then a day's run with Spark in the code server's container.
START_BOUND_S = 600
RUN_BOUND_S = 900


@dataclass
class Platform:
    project: str
    env: dict[str, str]

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
        command = [str(PODMAN_COMPOSE), "-p", self.project, "-f", str(COMPOSE_FILE)]
        command += ["--podman-args", shlex.join(PODMAN_GLOBAL_OPTIONS)]
        command += ["--podman-run-args", shlex.join(host_limits())]
        return subprocess.run(
            [*command, *args], capture_output=True, text=True, env=self.env, timeout=timeout
        )

    def container(self, service: str) -> str:
        """podman-compose's name for the service's container."""
        return f"{self.project}_{service}_1"

    def healthy(self, service: str) -> subprocess.CompletedProcess:
        return podman("healthcheck", "run", self.container(service))

    def logs(self, service: str) -> str:
        completed = podman("logs", "--tail", "60", self.container(service))
        return completed.stdout[-4000:] + completed.stderr[-4000:]

    def failure(self, run_id: str) -> str:
        """The run's failure events as the webserver shows them, for an assertion's message."""
        events = self.graphql(FAILURES, {"runId": run_id})["logsForRun"]["events"]
        failed = [e for e in events if "Failure" in e["__typename"]]
        return json.dumps(failed, indent=1)[-6000:] if failed else self.logs("code-server")

    def wait_healthy(self, service: str, deadline: float) -> None:
        while (checked := self.healthy(service)).returncode != 0:
            assert time.monotonic() < deadline, (
                f"{service} not healthy: {checked.stdout}{checked.stderr}\n{self.logs(service)}"
            )
            time.sleep(3)

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        url = f"http://127.0.0.1:{self.env['DAGSTER_WEBSERVER_PORT']}/graphql"
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())["data"]


FAILURES = """query ($runId: ID!) { logsForRun(runId: $runId) { ... on EventConnection {
    events { __typename ... on MessageEvent { message }
             ... on ExecutionStepFailureEvent { stepKey error { message } }
             ... on RunFailureEvent { pipelineFailureError: error { message } } } } } }"""


@pytest.fixture(scope="module")
def postgres():
    with postgres_or_fail() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"))
    try:
        broker.start()
    except KafkaStartError as error:
        pytest.fail(str(error).splitlines()[0], pytrace=False)
    yield broker
    broker.kill()


@pytest.fixture(scope="module")
def platform(image, postgres, kafka) -> Iterator[Platform]:
    """Step 9: ``PROFILES_TENANTS_FILE=... podman-compose -f deploy/compose.yaml up -d``."""
    if not PODMAN_COMPOSE.exists():
        pytest.fail(f"{PODMAN_COMPOSE} is missing: make installs the dev extra", pytrace=False)
    ports = {
        name: str(free_port())
        for name in (
            "DAGSTER_WEBSERVER_PORT",
            "DAGSTER_CODE_SERVER_PORT",
            "HBASE_THRIFT_PORT",
            "PROFILES_SERVE_PORT",
            "PROFILES_SERVE_METRICS_PORT",
            "PROFILES_GATEWAY_METRICS_PORT",
            "PROFILES_LAKE_SINK_METRICS_PORT",
            "PROFILES_LIVE_PROFILES_METRICS_PORT",
        )
    }
    env = {
        **os.environ,
        **postgres.dagster_env(),
        **ports,
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": kafka.bootstrap_servers,
        "PROFILES_TENANTS_FILE": str(REPO / "examples" / "tenants.json"),
        "PROFILES_START_DATE": DAY,
        "PROFILES_SENSOR_INTERVAL_SECONDS": "5",
    }
    started = Platform(f"adtech-profiles-test-{uuid.uuid4().hex[:8]}", env)
    try:
        up = started.compose("up", "-d")
        assert up.returncode == 0, up.stdout[-4000:] + up.stderr[-4000:]
        yield started
    finally:
        started.compose("down", "-v", timeout=300)


@pytest.mark.parametrize("service", [s for s in SERVICES if s != "serve"])
def test_each_service_of_the_compose_file_becomes_healthy(platform, service):
    platform.wait_healthy(service, time.monotonic() + START_BOUND_S)


def test_the_service_is_unhealthy_until_the_first_day_makes_the_sketch_table(platform):
    platform.wait_healthy("hbase-gateway", time.monotonic() + START_BOUND_S)
    assert platform.healthy("serve").returncode != 0


def test_a_day_landed_in_the_lake_is_run_by_the_sensor_through_the_code_server(platform):
    """Step 11: the day's files under ``landing/`` of the lake (written here by the generator
    in the code server's container, into the lake's volume); the landing sensor, on by
    default, runs ``daily_pipeline`` for it; the webserver lists the run."""
    deadline = time.monotonic() + START_BOUND_S
    for service in ("code-server", "daemon", "webserver", "hbase-gateway"):
        platform.wait_healthy(service, deadline)
    generated = podman(
        "exec",
        platform.container("code-server"),
        *["profiles", "generate", "--out", "/var/lib/profiles/lake", "--days", "1"],
        *["--events-per-day", "3000", "--start-date", DAY, "--seed", "11"],
        timeout=300,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr

    query = """{ runsOrError(filter: {pipelineName: "daily_pipeline"}) {
        ... on Runs { results { runId status tags { key value } } } } }"""
    deadline = time.monotonic() + RUN_BOUND_S
    while True:
        runs = platform.graphql(query)["runsOrError"]["results"]
        ended = [run for run in runs if run["status"] in ("SUCCESS", "FAILURE", "CANCELED")]
        if ended:
            break
        assert time.monotonic() < deadline, f"no run ended: {runs}\n{platform.logs('daemon')}"
        time.sleep(5)
    assert len(runs) == 1, runs
    tags = {tag["key"]: tag["value"] for tag in runs[0]["tags"]}
    assert tags["dagster/partition"] == DAY
    assert tags["dagster/sensor_name"] == "landing_sensor"
    assert runs[0]["status"] == "SUCCESS", platform.failure(runs[0]["runId"])

    platform.wait_healthy("serve", time.monotonic() + START_BOUND_S)


def test_the_job_page_says_auto_materialize_on_beside_the_running_automation_sensor(platform):
    """The daemon's role sets the instance's switch to follow ``automation_sensor`` at start:
    a new instance stores it as paused, and the job page's tag would say *off*."""
    platform.wait_healthy("daemon", time.monotonic() + START_BOUND_S)
    shown = platform.graphql("query { instance { autoMaterializePaused } }")
    assert shown["instance"]["autoMaterializePaused"] is False


STREAM_OBSERVATIONS = """{ assetOrError(assetKey: {path: ["event_stream"]}) { ... on Asset {
    assetEventHistory(limit: 10, eventTypeSelectors: [OBSERVATION]) {
        results { ... on ObservationEvent { metadataEntries { label } } } } } } }"""


def test_the_stream_observation_carries_both_stream_jobs_own_reports(platform):
    """The code server's event stream sensor reads the two stream jobs' listeners of the compose
    file without the operator naming them (``PROFILES_STREAM_METRICS_URLS`` unset)."""
    deadline = time.monotonic() + START_BOUND_S
    for service in ("code-server", "daemon", "webserver", "lake-sink", "live-profiles"):
        platform.wait_healthy(service, deadline)
    ports = (
        platform.env["PROFILES_LAKE_SINK_METRICS_PORT"],
        platform.env["PROFILES_LIVE_PROFILES_METRICS_PORT"],
    )
    while True:
        history = platform.graphql(STREAM_OBSERVATIONS)["assetOrError"]["assetEventHistory"]
        labels = [{e["label"] for e in event["metadataEntries"]} for event in history["results"]]
        reported = [
            all(f"at 127.0.0.1:{port} alive" in " ".join(seen) for port in ports) for seen in labels
        ]
        if any(reported):
            break
        assert time.monotonic() < deadline, f"observations: {labels}\n{platform.logs('daemon')}"
        time.sleep(5)
