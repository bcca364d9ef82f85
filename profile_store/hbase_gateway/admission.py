"""Admission at the connection cap: the longest-idle connection makes room for a new client.

A cap that turns newcomers away lets anyone lock every client out until the idle timeout, by
opening enough silent sockets, or sockets that send half a call and stop. At the cap the
gateway instead closes the connection that has gone longest without progress, one whose thread
is blocked reading or writing its socket (between calls, or in the middle of a call that stopped
coming), and admits the newcomer in its slot. A connection whose call is being served, or whose
bytes keep arriving, is never chosen; only when every connection is inside a call is a newcomer
closed at once.

The slots are one table per gateway. With several worker processes it lives in shared memory
created before the fork, and a worker claims a slot under a file lock (released by the kernel
if its holder dies), so the cap is the total and the longest-idle connection is chosen among
every worker's. A slot taken from another worker's connection is handed over at once; that
worker is woken through its pipe and closes the connection.

Each connection's thread publishes its state in its slot without a lock, as one 64-bit word: the
slot's assignment serial in the high bits and the millisecond since which it has been blocked
(0: working) in the low bits. A late write by a connection that was just evicted therefore
carries the old serial and is ignored: the slot's new connection counts as idle since its
admission until it writes its own state.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.sharedctypes import RawArray

_TIME_BITS = 42  # milliseconds of the monotonic clock: 139 years
_TIME_MASK = (1 << _TIME_BITS) - 1
_SERIAL_MASK = (1 << (63 - _TIME_BITS)) - 1
FREE = -1  # the owner of a free slot


def now_ms() -> int:
    """The monotonic clock in ms: system-wide on Linux, so comparable between the workers."""
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True)
class Admission:
    """A slot given to a new connection; ``evicted_from`` is the worker whose connection was
    closed to make room (None: the slot was free)."""

    slot: int
    serial: int
    evicted_from: int | None


class SlotActivity:
    """What a connection's thread writes into its slot: blocked since when, or working."""

    __slots__ = ("_cells", "_slot", "_tag")

    def __init__(self, cells: memoryview, slot: int, serial: int) -> None:
        self._cells = cells
        self._slot = slot
        self._tag = (serial & _SERIAL_MASK) << _TIME_BITS

    def blocked(self, since_ms: int) -> None:
        """The thread waits on its socket; its last progress was at ``since_ms``."""
        self._cells[self._slot] = self._tag | (since_ms & _TIME_MASK)

    def working(self) -> None:
        self._cells[self._slot] = self._tag


class ConnectionSlots:
    """The connection cap of one process; ``SharedSlots`` shares it between worker processes."""

    def __init__(self, cap: int, workers: int = 1) -> None:
        if cap < 1:
            raise ValueError(f"max_connections must be at least 1, got {cap}")
        self.cap = cap
        self.index = 0  # this process's worker index
        self._owner = RawArray(ctypes.c_int32, [FREE] * cap)
        self._serial = RawArray(ctypes.c_int64, cap)
        self._activity = RawArray(ctypes.c_int64, cap)
        self._activity_cells = memoryview(self._activity).cast("B").cast("q")  # fast stores
        self._admitted_ms = RawArray(ctypes.c_int64, cap)
        self._counts = RawArray(ctypes.c_int32, workers)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            yield

    def admit(self) -> Admission | None:
        """A slot for a new connection: a free one, else the longest-idle connection's; None
        when every connection is inside a call."""
        now = now_ms()
        with self._locked():
            evicted_from = None
            if sum(self._counts) < self.cap:
                slot = self._owner[:].index(FREE)
            else:
                idle = self._longest_idle(now)
                if idle is None:
                    return None
                slot = idle
                evicted_from = self._owner[slot]
                self._counts[evicted_from] -= 1
            serial = self._serial[slot] + 1
            self._serial[slot] = serial
            self._owner[slot] = self.index
            self._admitted_ms[slot] = now
            SlotActivity(self._activity_cells, slot, serial).blocked(now)
            self._counts[self.index] += 1
            return Admission(slot, serial, evicted_from)

    def _longest_idle(self, now: int) -> int | None:
        oldest, chosen = now + 1, None
        serials, activity, admitted = self._serial[:], self._activity[:], self._admitted_ms[:]
        for slot, word in enumerate(activity):
            if word >> _TIME_BITS == serials[slot] & _SERIAL_MASK:
                since = word & _TIME_MASK
                if since == 0:
                    continue  # inside a call
            else:  # the slot's connection has not written yet: idle since admitted
                since = admitted[slot]
            if since < oldest:
                oldest, chosen = since, slot
        return chosen

    def activity(self, admission: Admission) -> SlotActivity:
        return SlotActivity(self._activity_cells, admission.slot, admission.serial)

    def holds(self, admission: Admission) -> bool:
        """Whether the connection admitted as ``admission`` still has its slot (not evicted)."""
        slot = admission.slot
        return self._owner[slot] == self.index and self._serial[slot] == admission.serial

    def release(self, admission: Admission) -> None:
        """The connection ended; its slot is freed unless it was handed to a newcomer."""
        with self._locked():
            if self.holds(admission):
                self._owner[admission.slot] = FREE
                self._counts[self.index] -= 1

    def open_connections(self) -> list[int]:
        """Open connections per worker (the accept balance, for logs, metrics and tests)."""
        return list(self._counts)

    def defer_accept(self) -> bool:
        """Whether to leave the next connection to a less busy process (never, alone)."""
        return False

    def wake_fd(self) -> int | None:
        """The descriptor that becomes readable when another process evicted one of this
        process's connections (None: no other process can)."""
        return None

    def notify(self, index: int) -> None:
        """Tell worker ``index`` that one of its connections lost its slot."""


class SharedSlots(ConnectionSlots):
    """The connection cap across the worker processes of one gateway (created before the fork).

    Claims are serialized by a ``flock`` on a memfd that each worker opens anew (a file lock
    excludes other open file descriptions only). Each worker has a pipe; a worker whose
    connection was evicted by another reads a byte from it and closes that connection.
    """

    def __init__(self, cap: int, workers: int) -> None:
        super().__init__(cap, workers)
        self._memfd = os.memfd_create("hbase-gateway-slots")
        self._lock_fd = self._memfd  # the parent's; a worker opens its own after the fork
        self._pipes = [os.pipe() for _ in range(workers)]
        for read_end, write_end in self._pipes:
            os.set_blocking(read_end, False)
            os.set_blocking(write_end, False)

    def bind(self, index: int) -> None:
        """Become worker ``index`` (in the child, after the fork)."""
        self.index = index
        self._lock_fd = os.open(f"/proc/self/fd/{self._memfd}", os.O_RDWR | os.O_CLOEXEC)
        self._counts[index] = 0

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def defer_accept(self) -> bool:
        mine = self._counts[self.index]
        return any(count < mine for count in self._counts)

    def wake_fd(self) -> int | None:
        return self._pipes[self.index][0]

    def notify(self, index: int) -> None:
        with contextlib.suppress(BlockingIOError):  # a full pipe: it has wake-ups pending
            os.write(self._pipes[index][1], b"!")

    def reset(self, index: int) -> None:
        """In the parent: worker ``index`` died, and its connections with it."""
        with self._locked():
            for slot, owner in enumerate(self._owner):
                if owner == index:
                    self._owner[slot] = FREE
            self._counts[index] = 0
