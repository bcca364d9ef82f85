"""``deploy/compose.yaml``, ``deploy/compose.dev.yaml`` and the image's roles
(``deploy/entrypoint.sh``), checked without a container: the roles run in this virtualenv, as
they run in the image's.

Every service runs a role of the entrypoint whose command, with the service's arguments, is a
real command of the installed project (its ``--help`` answers); every service has a health
check whose probe is a real command too; the probes tell a listening service from a missing
one; and the health checks of the service and the gateway pass against the processes their
roles start.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO / "deploy" / "entrypoint.sh"
IMAGE_ENTRYPOINT = "/opt/profiles/deploy/entrypoint.sh"
BIN = Path(sys.executable).parent
PLATFORM = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())["services"]
DEVELOPMENT = yaml.safe_load((REPO / "deploy" / "compose.dev.yaml").read_text())["services"]
SERVICES = {**PLATFORM, **DEVELOPMENT}
LONG_RUNNING = {
    "code-server",
    "webserver",
    "daemon",
    "serve",
    "hbase-gateway",
    "lake-sink",
    "live-profiles",
}


def in_this_venv(command: list[str]) -> list[str]:
    """A command of the image, with the image's entrypoint replaced by the repository's."""
    return [str(ENTRYPOINT) if part == IMAGE_ENTRYPOINT else part for part in command]


def venv_env() -> dict[str, str]:
    """The environment of the image's roles: this virtualenv's commands first on PATH."""
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}


def run(command: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        in_this_venv(command), capture_output=True, text=True, env=venv_env(), timeout=120
    )


def health_probe(name: str) -> list[str]:
    """A service's health check (``CMD-SHELL``), its ports the defaults the compose tool puts
    in place of ``${NAME:-default}``, as the words the container's shell runs."""
    kind, command = SERVICES[name]["healthcheck"]["test"]
    assert kind == "CMD-SHELL", (name, kind)
    return shlex.split(re.sub(r"\$\{[A-Z_]+:-([^}]+)\}", r"\1", command))


def with_port(probe: list[str], url: str) -> list[str]:
    """A health check's probe pointed at ``url`` instead of the port the image uses."""
    return [re.sub(r"^http://127\.0\.0\.1:\d+", url, part) for part in probe]


def test_the_compose_file_runs_every_long_running_service():
    assert set(PLATFORM) == LONG_RUNNING


def test_the_development_compose_file_runs_kafka_and_apache_hbase():
    assert set(DEVELOPMENT) == {"kafka", "apache-hbase"}


def test_every_service_runs_the_image_of_the_packages_version():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    tags = {service["image"].rsplit(":", 1)[1] for service in SERVICES.values()}
    assert tags == {version}, tags


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_each_services_role_is_a_real_command_of_the_project(name):
    completed = run([str(ENTRYPOINT), *SERVICES[name]["command"], "--help"])
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "usage" in completed.stdout.lower(), completed.stdout


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_each_service_has_a_health_check_that_is_a_real_command(name):
    probe = health_probe(name)
    if probe[0] == IMAGE_ENTRYPOINT:
        assert probe[1] in {"http-ok", "tcp-ok"}, probe
    else:
        completed = run([*probe, "--help"])
        assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_health_checks_read_the_readiness_of_the_gateway_and_the_stream_jobs():
    for name in ("hbase-gateway", "lake-sink", "live-profiles"):
        url = health_probe(name)[-1]
        assert urlsplit(url).path == "/readyz", (name, url)


def test_the_http_probe_fails_for_a_port_nothing_listens_on():
    completed = run([str(ENTRYPOINT), "http-ok", "http://127.0.0.1:1/readyz"])
    assert completed.returncode != 0


def test_the_tcp_probe_fails_for_a_port_nothing_listens_on():
    completed = run([str(ENTRYPOINT), "tcp-ok", "127.0.0.1", "1"])
    assert completed.returncode != 0


def test_the_services_health_check_passes_once_its_role_serves(
    serve_process, sketch_gateway, tmp_path, monkeypatch
):
    """``profiles serve`` over a Thrift server holding a sketch table, as a deployment runs it
    (its health answers 503 until the table exists: the first day's pipeline run makes it)."""
    monkeypatch.setenv("PATH", venv_env()["PATH"])
    monkeypatch.setenv("HBASE_THRIFT_HOST", sketch_gateway.host)
    monkeypatch.setenv("HBASE_THRIFT_PORT", str(sketch_gateway.port))
    monkeypatch.setenv("PROFILES_LAKE_ROOT", str(tmp_path / "lake"))
    command = [*SERVICES["serve"]["command"], "--port", "0", "--metrics-port", "0"]
    command = [str(REPO / "examples" / "tenants.json") if "/secrets/" in c else c for c in command]
    url, _ = serve_process([str(ENTRYPOINT), *command])
    completed = run(with_port(health_probe("serve"), url))
    assert completed.returncode == 0, completed.stderr


def test_the_gateways_health_check_passes_once_its_role_serves(tmp_path):
    ready = tmp_path / "ready.json"
    command = [*SERVICES["hbase-gateway"]["command"], "--host", "127.0.0.1", "--port", "0"]
    command += ["--metrics-port", "0", "--workers", "1", "--ready-file", str(ready)]
    env = {**venv_env(), "PROFILES_HBASE_DATA_DIR": str(tmp_path / "hbase")}
    with (tmp_path / "gateway.log").open("wb") as log:
        gateway = subprocess.Popen([str(ENTRYPOINT), *command], env=env, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert gateway.poll() is None, (tmp_path / "gateway.log").read_text()
            assert time.monotonic() < deadline, "the gateway wrote no ready file in 60 s"
            time.sleep(0.2)
        metrics_port = json.loads(ready.read_text())["metrics_port"]
        probe = health_probe("hbase-gateway")
        completed = run(with_port(probe, f"http://127.0.0.1:{metrics_port}"))
        assert completed.returncode == 0, completed.stderr
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)
