"""Waiting for a Dagster webserver a test started (``dagster-webserver`` or ``dagster dev``),
starting one over an instance, and asking it over GraphQL."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_answering(
    process: subprocess.Popen, url: str, log: Path, timeout_s: float = 180
) -> None:
    """Until ``url/server_info`` answers 200; the test fails with the log's tail if the process
    exits or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            pytest.fail(f"the webserver exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            if httpx.get(f"{url}/server_info", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"the webserver did not answer within {timeout_s:.0f} s")
        time.sleep(1)


@contextlib.contextmanager
def dagster_webserver(home: Path, env: Mapping[str, str], timeout_s: float = 180) -> Iterator[str]:
    """``dagster-webserver`` over the repository's ``workspace.yaml`` and the instance at
    ``home`` on a free port, its output in ``home/webserver.log``; its URL."""
    port = free_port()
    command = [str(Path(sys.executable).with_name("dagster-webserver")), "-w", "workspace.yaml"]
    log_path = home / "webserver.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [*command, "-h", "127.0.0.1", "-p", str(port)],
            cwd=REPO,
            env={**env, "DAGSTER_HOME": str(home)},
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_until_answering(process, url, log_path, timeout_s)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def graphql(url: str, query: str, variables: dict | None = None) -> dict:
    """The ``data`` of a GraphQL query to the webserver at ``url``; an error fails the test."""
    response = httpx.post(
        f"{url}/graphql", json={"query": query, "variables": variables or {}}, timeout=120
    )
    response.raise_for_status()
    body = response.json()
    assert "errors" not in body, body["errors"]
    return body["data"]
