"""Liveness and readiness of a gateway, answered beside ``/metrics`` (``/healthz``, ``/readyz``).

Every loop that keeps the gateway serving (each worker's accept loop, and in a pre-forked
gateway the supervisor's loop) records the time of its last turn in shared memory, created
before the fork; the process serving ``/metrics`` reads them. A loop turns at least every
second, so one that has not come back for ``bound_s`` is wedged (a stopped process, a held
interpreter lock): the gateway is not live, and a supervisor should restart it. It is ready
once a worker has its store open and accepts on the Thrift port, and until it starts stopping.
Times are ``CLOCK_MONOTONIC``, one clock for every process of the machine.
"""

from __future__ import annotations

import ctypes
import os
import time
from multiprocessing.sharedctypes import RawArray, RawValue

DEFAULT_LIVENESS_TIMEOUT_S = 30.0

_NOT_STARTED = 0.0
_STOPPED = -1.0


class GatewayHealth:
    """The beats of the accept loops of ``workers`` workers (loops ``0 .. workers - 1``) and,
    with ``supervised``, of the supervisor's loop (loop ``workers``)."""

    def __init__(
        self, workers: int, bound_s: float = DEFAULT_LIVENESS_TIMEOUT_S, supervised: bool = False
    ) -> None:
        if not bound_s > 0:
            raise ValueError(f"bound_s must be greater than 0, got {bound_s}")
        loops = [f"worker {i}" for i in range(workers)] + (["supervisor"] if supervised else [])
        self.workers = workers
        self.loops = loops
        self.bound_s = bound_s
        self._beats = RawArray(ctypes.c_double, len(loops))
        self._pids = RawArray(ctypes.c_int64, len(loops))
        self._stopping = RawValue(ctypes.c_bool, False)

    def beat(self, loop: int) -> None:
        """The loop ``loop`` came back (called by the loop itself, in its process)."""
        self._pids[loop] = os.getpid()
        self._beats[loop] = time.monotonic()

    def stopped(self, loop: int) -> None:
        """The loop ended (its process is draining or replaced): it is not waited for."""
        self._beats[loop] = _STOPPED

    def restarting(self, loop: int) -> None:
        """The loop's process died and another is being started."""
        self._beats[loop] = _NOT_STARTED

    def stopping(self) -> None:
        """The gateway was told to stop: not ready from now on."""
        self._stopping.value = True

    def liveness(self) -> tuple[bool, str]:
        """``(live, why)``: not live if a started loop has not come back within the bound."""
        now = time.monotonic()
        for loop, name in enumerate(self.loops):
            beat = self._beats[loop]
            if beat > 0 and now - beat > self.bound_s:
                return False, (
                    f"{name} (pid {self._pids[loop]}) has not come back for {now - beat:.1f} s "
                    f"(bound {self.bound_s:g} s)"
                )
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        """``(ready, why)``: ready once a worker serves, until the gateway stops."""
        if self._stopping.value:
            return False, "stopping"
        workers = range(self.workers)
        if any(self._beats[i] > 0 for i in workers):
            return True, "ok"
        if any(self._beats[i] == _STOPPED for i in workers):
            return False, "stopping"
        return False, f"starting: none of {self.workers} workers serves the Thrift port yet"
