"""Commands that run a server in the foreground until Ctrl-C (``make kafka``, ``make
spark-cluster``): started as a user starts them, read until they say they are up, stopped with
SIGINT."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
READY = "Ctrl-C stops it."


def start_until_ready(command: list[str]) -> tuple[subprocess.Popen, str]:
    """The running command and what it printed up to and including its ``READY`` line."""
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output = ""
    while READY not in output:
        line = process.stdout.readline()
        if not line:
            process.wait()
            raise AssertionError(f"the command ended early:\n{output}")
        output += line
    return process, output


def interrupt(process: subprocess.Popen) -> str:
    """Send SIGINT as Ctrl-C does; what the command printed after its ``READY`` line."""
    process.send_signal(signal.SIGINT)
    rest, _ = process.communicate(timeout=120)
    return rest
