"""Servers this project starts as child processes: free ports, stopping, and their logs.

The embedded gateway, a real Apache HBase and a Spark standalone cluster are all started the
same way (a child on a free loopback port, output to a log file) and stopped the same way: a
signal, a bounded wait, then SIGKILL, so that a hung child never hangs the caller.

Their ports lie outside the kernel's ephemeral range. A client connecting to a port in that
range while nothing listens there may be given that very port as its own source port and connect
to itself (TCP's simultaneous open); the socket then holds the port, and a server restarted on
it fails with "Address already in use" for as long as clients keep retrying.
"""

from __future__ import annotations

import os
import random
import select
import signal
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LINUX_EPHEMERAL_RANGE = (32768, 60999)
# Below this, the well-known defaults of servers one may run beside (5432, 8080, 9090, 9092).
FIRST_SERVER_PORT = 10000


def ephemeral_port_range() -> tuple[int, int]:
    """The ports the kernel gives to outgoing connections (both ends included)."""
    try:
        low, high = (int(part) for part in EPHEMERAL_RANGE_FILE.read_text().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL_RANGE
    return low, high


def server_port_candidates() -> list[int]:
    """The ports ``free_port`` chooses among: above ``FIRST_SERVER_PORT``, outside the
    ephemeral range, else (a range reaching down that far) below it from 1024."""
    low, high = ephemeral_port_range()
    outside = [*range(FIRST_SERVER_PORT, low), *range(high + 1, 65536)]
    return outside or list(range(1024, low))


def free_port() -> int:
    """A TCP port on 127.0.0.1, outside the ephemeral range, that nothing is bound to now.

    Probed by ``bind``, as the server will. A kernel that gives every port to outgoing
    connections leaves only a port of its own choosing.
    """
    candidates = server_port_candidates()
    if not candidates:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            return probe.getsockname()[1]
    tried = random.sample(candidates, min(len(candidates), 200))
    for port in tried:
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise OSError(f"no free port among {len(tried)} tried outside the ephemeral range")


def stop_process(
    process: subprocess.Popen, timeout: float, signum: int = signal.SIGTERM
) -> int | None:
    """Send ``signum`` if it still runs, wait up to ``timeout`` s, then kill; its exit code."""
    return stop_processes({"child": process}, timeout, signum)["child"].code


@dataclass(frozen=True)
class Stopped:
    """How a child ended when asked to: its exit code, the seconds from the signal until it
    was seen gone, and whether it had to be killed."""

    code: int | None
    seconds: float
    killed: bool


def stop_processes(
    processes: Mapping[str, subprocess.Popen], timeout: float, signum: int = signal.SIGTERM
) -> dict[str, Stopped]:
    """``stop_process`` for several children at once: each is signalled before any is waited
    for, so they wind down together within one ``timeout``; how each ended, by name."""
    signalled = time.monotonic()
    for process in processes.values():
        if process.poll() is None:
            process.send_signal(signum)
    stopped = {}
    for name, process in processes.items():
        left = max(0.0, signalled + timeout - time.monotonic())
        killed = not wait_for_exit(process, left)
        if killed:
            process.kill()
        process.wait()
        stopped[name] = Stopped(process.returncode, time.monotonic() - signalled, killed)
    return stopped


def wait_for_exit(process: subprocess.Popen, timeout: float) -> bool:
    """Whether ``process`` exits within ``timeout`` s, known the moment it does.

    ``Popen.wait(timeout)`` polls with sleeps of up to 50 ms, a tenth of what a command that
    starts the embedded gateway may take in all; a pidfd becomes readable when the process
    exits.
    """
    if process.poll() is not None:
        return True  # reaped: its pid may be another process's by now
    try:
        pidfd = os.pidfd_open(process.pid)  # a zombie until reaped (by us), so still this one
    except OSError:  # a kernel without pidfd: poll as Popen does
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        readable, _, _ = select.select([pidfd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(pidfd)


def log_tail(logs: Iterable[Path], lines: int = 40) -> str:
    """The last ``lines`` of each log, headed by its name (for start-up error messages)."""
    tails = []
    for log in sorted(logs):
        text = log.read_text(errors="replace").splitlines()[-lines:]
        tails.append(f"== {log.name}\n" + "\n".join(text))
    return "\n".join(tails)


def wait_for_interrupt() -> None:
    """Block until Ctrl-C or SIGTERM (the ``make hbase`` / ``make spark-cluster`` foreground)."""
    stopping = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, stopping)
    signal.sigwait(stopping)
