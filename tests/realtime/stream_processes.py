"""The real-time path's commands as real processes: ``profiles serve`` (the collector),
``profiles stream lake-sink`` and ``profiles stream live-profiles``, each logging to its file."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
START_BOUND_S = 180  # only against hanging forever: the machine may be loaded


class Commands:
    """``profiles`` commands started with one environment; those still running at ``close``
    are killed."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.directory = directory
        self.env = env
        self.processes: dict[str, subprocess.Popen] = {}

    def start(self, name: str, *args: str) -> subprocess.Popen:
        with open(self.directory / f"{name}.log", "wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "profile_store.cli", *args],
                cwd=REPO,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.processes[name] = process
        return process

    def log(self, name: str) -> str:
        return (self.directory / f"{name}.log").read_text(errors="replace")

    def serve(self, name: str, *args: str) -> str:
        """Start ``profiles serve`` on a free port; its URL once uvicorn listens."""
        process = self.start(name, "serve", "--port", "0", *args)
        deadline = time.monotonic() + START_BOUND_S
        while time.monotonic() < deadline:
            match = re.search(r"Uvicorn running on (http://\S+)", self.log(name))
            if match:
                return match.group(1)
            assert process.poll() is None, self.log(name)
            time.sleep(0.1)
        raise AssertionError(f"serve did not start:\n{self.log(name)}")

    def stop(self, name: str) -> int:
        """SIGTERM (the batch in hand is finished), then its exit code."""
        process = self.processes[name]
        process.send_signal(signal.SIGTERM)
        return process.wait(timeout=120)

    def running(self, name: str) -> bool:
        return self.processes[name].poll() is None

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
