"""Waiting for a Dagster webserver a test started (``dagster-webserver`` or ``dagster dev``)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest


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
