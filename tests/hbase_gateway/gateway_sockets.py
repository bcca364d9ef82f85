"""Raw sockets against a running gateway, and which worker process serves each of them.

Connections are told apart by the worker that serves them (the process holding the server end
of the TCP connection, found in ``/proc``), so tests do not depend on luck to cross workers.
"""

from __future__ import annotations

import os
import selectors
import socket
import time
from collections.abc import Callable

import happybase

from profile_store.hbase_gateway.process import EmbeddedGateway, child_pids


def wait_for(condition: Callable[[], bool], timeout_s: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


def idle_sockets(gateway: EmbeddedGateway, count: int) -> list[socket.socket]:
    return [socket.create_connection((gateway.host, gateway.port), timeout=5) for _ in range(count)]


def held_connections(
    gateway: EmbeddedGateway, count: int, settle_s: float = 0.5
) -> list[socket.socket]:
    """``count`` idle connections the gateway kept open for ``settle_s``, opened one after the
    other (so each is idle longer than the next).

    On a loaded machine the connection that checked the gateway was up may still hold its slot
    for a moment; a socket closed by the server meanwhile is opened again.
    """
    held: list[socket.socket] = []
    deadline = time.monotonic() + 30
    while len(held) < count:
        sock = socket.create_connection((gateway.host, gateway.port), timeout=settle_s)
        try:
            sock.recv(1)
        except TimeoutError:  # nothing to read and not closed: admitted
            sock.settimeout(5)
            held.append(sock)
            continue
        sock.close()
        assert time.monotonic() < deadline, "the gateway kept closing new connections"
    return held


def closed_by_server(sock: socket.socket, timeout_s: float = 30.0) -> bool:
    """Whether the server closed ``sock`` within ``timeout_s`` (what it sent first is read)."""
    sock.settimeout(timeout_s)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def still_open(sock: socket.socket, settle_s: float = 0.3) -> bool:
    """Whether the server kept ``sock`` open (nothing arrives within ``settle_s``)."""
    return not closed_by_server(sock, settle_s)


def count_closed(sockets: list[socket.socket], at_least: int, timeout_s: float = 60.0) -> int:
    """How many of ``sockets`` the server closed, waiting until ``at_least`` are or
    ``timeout_s`` passed."""
    closed: set[socket.socket] = set()
    with selectors.DefaultSelector() as selector:
        for sock in sockets:
            selector.register(sock, selectors.EVENT_READ)
        deadline = time.monotonic() + timeout_s
        while len(closed) < at_least and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.5):
                sock = key.fileobj
                try:
                    data = sock.recv(65536)
                except (ConnectionResetError, BlockingIOError):
                    data = b""
                if not data:
                    closed.add(sock)
                    selector.unregister(sock)
    return len(closed)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    return inodes


def serving_pid(gateway: EmbeddedGateway, client_port: int) -> int:
    """The worker process holding the server end of the connection from ``client_port``."""
    wanted_local, wanted_remote = f":{gateway.port:04X}", f":{client_port:04X}"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with open("/proc/net/tcp") as table:
            inodes = {
                fields[9]
                for fields in (line.split() for line in list(table)[1:])
                if fields[1].endswith(wanted_local) and fields[2].endswith(wanted_remote)
            }
        for pid in child_pids(gateway.pid):
            if inodes & _socket_inodes(pid):
                return pid
        time.sleep(0.02)  # accepted but not yet ... or not yet in the table
    raise AssertionError(f"no worker serves the connection from port {client_port}")


def worker_of(gateway: EmbeddedGateway, connection: happybase.Connection) -> int:
    connection.tables()  # the connection is served (accepted) by now
    return serving_pid(gateway, connection.transport.sock.getsockname()[1])


def connections_on_two_workers(
    gateway: EmbeddedGateway,
) -> tuple[happybase.Connection, happybase.Connection]:
    """Two connections served by different worker processes."""
    first = happybase.Connection(**gateway.connection_kwargs())
    for _ in range(20):
        second = happybase.Connection(**gateway.connection_kwargs())
        if worker_of(gateway, second) != worker_of(gateway, first):
            return first, second
        second.close()
    raise AssertionError("every connection landed on one worker")
