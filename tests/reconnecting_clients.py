"""Clients that keep reconnecting to a server's port while it is down, as a pipeline's or a
service's clients do while a server restarts.

Each thread connects about a thousand times a second from a port the kernel chooses, as every
client does (enough to go through the kernel's ephemeral ports in seconds); a connection that
turns out to be to itself (its source port is the server's port, TCP's simultaneous open) is
held for a second, as a client waiting for an answer would, and counted.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Reconnects:
    attempts: int = 0
    accepted: int = 0
    self_connected: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def wait_until_accepted(self, checks: int = 300) -> bool:
        """Whether a connection is accepted within ``checks`` tenths of a second."""
        for _ in range(checks):
            if self.accepted:
                return True
            time.sleep(0.1)
        return bool(self.accepted)

    def count(self, *, accepted: bool = False, self_connected: bool = False) -> None:
        with self.lock:
            self.attempts += 1
            self.accepted += accepted
            self.self_connected += self_connected


def _reconnect(port: int, stop: threading.Event, counts: Reconnects) -> None:
    while not stop.is_set():
        with socket.socket() as client:
            client.settimeout(1.0)
            try:
                client.connect(("127.0.0.1", port))
            except OSError:
                counts.count()
                stop.wait(0.001)
                continue
            if client.getsockname() == client.getpeername():
                counts.count(self_connected=True)
                stop.wait(1.0)
            else:
                counts.count(accepted=True)


@contextlib.contextmanager
def reconnecting_clients(port: int, threads: int = 2) -> Iterator[Reconnects]:
    """``threads`` clients reconnecting to 127.0.0.1:``port`` until the block ends."""
    stop = threading.Event()
    counts = Reconnects()
    workers = [
        threading.Thread(target=_reconnect, args=(port, stop, counts), daemon=True)
        for _ in range(threads)
    ]
    for worker in workers:
        worker.start()
    try:
        yield counts
    finally:
        stop.set()
        for worker in workers:
            worker.join()
