"""The repository's image (``Dockerfile``), built with podman (``image_build``) and run here."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from dagster._grpc.client import DagsterGrpcClient
from dagster._grpc.types import ListRepositoriesResponse
from dagster_services import free_port
from dagster_shared.serdes import deserialize_value
from image_build import VERSION, host_limits, podman, run_in_image


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
