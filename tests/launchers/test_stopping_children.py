"""Children asked to stop together: signalled at once, waited for within one bound, killed
past it, and each one's way of ending told apart."""

from __future__ import annotations

import subprocess
import sys

from profile_store.launchers.child_processes import stop_processes

IGNORES_SIGTERM = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)
TAKES_A_SECOND = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGTERM, lambda *_: (time.sleep(1.0), sys.exit(0)))\n"
    "print('ready', flush=True)\n"
    "time.sleep(600)\n"
)


def child(code: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"ready\n"
    return process


def test_a_child_that_exits_on_the_signal_is_not_killed_and_keeps_its_code() -> None:
    stopped = stop_processes({"quick": child(TAKES_A_SECOND)}, timeout=30.0)["quick"]
    assert (stopped.code, stopped.killed) == (0, False)
    assert 1.0 <= stopped.seconds < 30.0


def test_a_child_ignoring_the_signal_is_killed_at_the_bound_and_said_so() -> None:
    stopped = stop_processes({"deaf": child(IGNORES_SIGTERM)}, timeout=1.0)["deaf"]
    assert (stopped.code, stopped.killed) == (-9, True)
    assert stopped.seconds >= 1.0


def test_children_wind_down_together_within_one_bound() -> None:
    names = ("first", "second", "third")
    stopped = stop_processes({name: child(TAKES_A_SECOND) for name in names}, timeout=30.0)
    assert [stopped[name].killed for name in names] == [False, False, False]
    # Each takes a second after the signal: one after the other would take three.
    assert stopped["third"].seconds < 3.0
