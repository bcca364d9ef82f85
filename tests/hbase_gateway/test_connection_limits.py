"""Idle or excess connections never take the gateway down, and never starve a working client."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import happybase
import pytest
from thriftpy2.transport import TTransportException

from profile_store.hbase_client import table_opener
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.hbase_gateway.server import GatewayServer
from profile_store.hbase_gateway.store import Store

CAP = 8


def idle_sockets(gateway: EmbeddedGateway, count: int) -> list[socket.socket]:
    return [socket.create_connection((gateway.host, gateway.port), timeout=5) for _ in range(count)]


def admitted_sockets(gateway: EmbeddedGateway, count: int, settle_s: float = 0.5) -> list:
    """``count`` idle connections the gateway kept open for ``settle_s``.

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
        assert time.monotonic() < deadline, "the gateway kept refusing below its cap"
    return held


def test_more_idle_sockets_than_the_cap_leave_a_working_client_served(tmp_path: Path) -> None:
    args = ("--max-connections", str(CAP), "--idle-timeout", "60")
    with EmbeddedGateway(tmp_path, server_args=args) as gateway:
        canary = happybase.Connection(**gateway.connection_kwargs())
        canary.create_table("canary", {"f": {}})
        table = canary.table("canary")
        flood = idle_sockets(gateway, CAP * 5)
        try:
            for i in range(50):
                table.put(f"r{i}".encode(), {b"f:c": b"%d" % i})
                assert table.row(f"r{i}".encode()) == {b"f:c": b"%d" % i}
            assert gateway.running
            # The accept loop logs each refusal as it reaches the excess sockets; on a loaded
            # machine that can come after the canary's calls, so wait for it (flood still open).
            refused = "connection refused: 8 connections open (the cap)"
            deadline = time.monotonic() + 30
            while refused not in gateway.log_path.read_text() and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            for sock in flood:
                sock.close()
            canary.close()
        log = gateway.log_path.read_text()
    assert refused in log


def test_a_connection_over_the_cap_is_closed_not_left_waiting(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, server_args=("--max-connections", "2")) as gateway:
        held = admitted_sockets(gateway, 2)
        (extra,) = idle_sockets(gateway, 1)
        assert extra.recv(1) == b""  # closed by the server: an immediate error, not a hang
        for sock in held:
            sock.close()


def test_a_connection_idle_past_the_timeout_is_closed_and_its_slot_freed(tmp_path: Path) -> None:
    args = ("--max-connections", "2", "--idle-timeout", "1")
    with EmbeddedGateway(tmp_path, server_args=args) as gateway:
        held = idle_sockets(gateway, 2)
        for sock in held:
            assert sock.recv(1) == b""  # closed after about a second of silence
        late = happybase.Connection(**gateway.connection_kwargs())
        assert late.tables() == []
        late.close()


def test_a_pooled_client_working_within_the_timeout_is_never_dropped(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, server_args=("--idle-timeout", "2")) as gateway:
        pool = happybase.ConnectionPool(size=1, **gateway.connection_kwargs())
        for _ in range(4):
            with pool.connection() as connection:
                assert connection.tables() == []
            time.sleep(1)


def test_a_thread_that_cannot_start_is_logged_and_the_server_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = GatewayServer(Store(tmp_path), port=0)
    failures = iter([RuntimeError("can't start new thread")])

    def start(thread: threading.Thread) -> None:
        error = next(failures, None)
        if error is not None:
            raise error
        thread.start()

    server._start = start
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        first = happybase.Connection(host=server.host, port=server.port)
        with pytest.raises((TTransportException, ConnectionError)):  # closed: no thread for it
            first.tables()
        second = happybase.Connection(host=server.host, port=server.port)
        assert second.tables() == []
        second.close()
    finally:
        server.shutdown()
        serving.join(10)
        server.store.close()
    assert not serving.is_alive()
    assert "no thread could be started (can't start new thread)" in caplog.text


def test_a_pooled_table_opener_reconnects_after_the_server_closed_an_idle_connection(
    tmp_path: Path,
) -> None:
    with EmbeddedGateway(tmp_path, server_args=("--idle-timeout", "1")) as gateway:
        admin = happybase.Connection(**gateway.connection_kwargs())
        admin.create_table("t", {"f": {}})
        admin.close()
        pool = happybase.ConnectionPool(size=1, **gateway.connection_kwargs())
        open_table = table_opener(pool, "t")
        with open_table() as table:
            table.put(b"r", {b"f:c": b"1"})
        time.sleep(2)  # the server closes the pooled connection meanwhile
        with open_table() as table:
            assert table.row(b"r") == {b"f:c": b"1"}
