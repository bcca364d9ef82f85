"""The repository's image (``Dockerfile``), built with podman and run here.

The base image, ``debian:bookworm-slim``, is pulled when a registry serves it, else built from
Debian's packages (``deploy/base-image.sh``); a proxy's CA that this machine trusts (Debian's
``/usr/local/share/ca-certificates``) is given to the build for pip and Maven. The build runs in
chroot isolation with the host's network, the containers under runc with the host's limits:
podman's defaults (crun, a million open files) cannot start a container in a sandbox such as
this one (cgroups in hybrid mode, lower hard limits). Layers are cached in podman's storage, so
a build after a code change redoes the project's install, not its dependencies.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster._grpc.client import DagsterGrpcClient
from dagster._grpc.types import ListRepositoriesResponse
from dagster_services import free_port
from dagster_shared.serdes import deserialize_value

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
IMAGE = f"localhost/adtech-profiles:{VERSION}"
LOCAL_CAS = Path("/usr/local/share/ca-certificates")
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
INSTALL = "apt-get install -y podman runc debootstrap"


def host_limits() -> list[str]:
    """``--ulimit`` options within this machine's limits: podman's defaults (a million open
    files, as many processes as the host allows) are refused here; 4,096 processes are plenty
    for one role."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    files = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
    return ["--ulimit", f"nofile={files}:{files}", "--ulimit", "nproc=4096:4096"]


def podman(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, timeout=timeout)


def run_in_image(*command: str) -> subprocess.CompletedProcess:
    return podman("run", "--rm", "--network", "host", *host_limits(), IMAGE, *command)


@pytest.fixture(scope="module")
def image(tmp_path_factory) -> str:
    missing = [tool for tool in ("podman", "runc", "debootstrap") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"the image tests need {', '.join(missing)} (Debian: {INSTALL})", pytrace=False)
    base = subprocess.run(
        [str(REPO / "deploy" / "base-image.sh")], capture_output=True, text=True, timeout=1200
    )
    assert base.returncode == 0, base.stdout[-3000:] + base.stderr[-3000:]
    build = [*PODMAN, "build", "--isolation", "chroot", "--network", "host", "-t", IMAGE]
    cas = sorted(LOCAL_CAS.glob("*.crt"))
    if cas:
        bundle = tmp_path_factory.mktemp("ca") / "extra-ca.pem"
        bundle.write_text("".join(ca.read_text() for ca in cas))
        build += ["--secret", f"id=extra-ca,src={bundle}"]
    built = subprocess.run([*build, str(REPO)], capture_output=True, text=True, timeout=3600)
    assert built.returncode == 0, built.stdout[-5000:] + built.stderr[-3000:]
    return IMAGE


def test_the_image_prints_the_release(image):
    completed = run_in_image("profiles", "--version")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == f"profiles {VERSION}"


def test_the_image_runs_as_a_user_other_than_root(image):
    completed = run_in_image("id", "-u")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() not in {"", "0"}


def test_the_image_holds_the_s3a_jars_without_maven(image):
    """The jar cache was filled at build time: without Maven in the image, a cache that
    lacked them would fail here, naming Maven."""
    completed = run_in_image(
        "python",
        "-c",
        "from profile_store.spark.s3a import hadoop_aws_jars; print(len(hadoop_aws_jars()))",
    )
    assert completed.returncode == 0, completed.stderr
    assert int(completed.stdout) >= 2  # hadoop-aws and the AWS SDK bundle


@pytest.fixture
def code_server(image) -> Iterator[tuple[str, int]]:
    port = free_port()
    container = f"adtech-profiles-code-server-{port}"
    try:
        started = podman(
            "run",
            "-d",
            "--name",
            container,
            "--network",
            "host",
            *host_limits(),
            "-e",
            f"DAGSTER_CODE_SERVER_PORT={port}",
            image,
            "code-server",
        )
        assert started.returncode == 0, started.stderr
        yield container, port
    finally:
        podman("rm", "-f", container)


def test_the_code_server_role_serves_the_code_location(code_server):
    """The code server in the container answers its health check (the compose file's) and
    lists the location's repository to a client on the host, as the webserver and the daemon
    load it."""
    container, port = code_server
    health = ["exec", container, "dagster", "api", "grpc-health-check", "-p", str(port)]
    deadline = time.monotonic() + 600  # a bound for a machine under heavy load, not a speed
    while (checked := podman(*health)).returncode != 0:
        assert time.monotonic() < deadline, checked.stdout + podman("logs", container).stderr
        time.sleep(2)
    listed = deserialize_value(DagsterGrpcClient(host="127.0.0.1", port=port).list_repositories())
    assert isinstance(listed, ListRepositoriesResponse), listed
    assert [symbol.repository_name for symbol in listed.repository_symbols] == ["__repository__"]
