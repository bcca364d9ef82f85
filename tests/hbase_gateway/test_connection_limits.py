"""Idle, stalled or excess connections never lock a client out, nor take the gateway down.

At the connection cap the longest-idle connection (silent, or stalled in the middle of a call)
is closed to admit a newcomer; a connection inside a call, or whose call is still arriving, is
not idle.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from pathlib import Path

import happybase
import Hbase_thrift
import pytest
from gateway_metrics import scrape
from gateway_sockets import (
    closed_by_server,
    count_closed,
    held_connections,
    idle_sockets,
    still_open,
    wait_for,
)
from thrift_bytes import encoded_call, half_call, put_call
from thriftpy2.transport import TTransportException

from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.hbase_gateway.server import DEFAULT_MAX_CONNECTIONS, GatewayServer
from profile_store.hbase_gateway.store import Store


def served_at_once(gateway: EmbeddedGateway) -> None:
    """A new happybase client connects and its calls are answered (a refused connection would
    fail its first call at once; the timeout only keeps a hang from hanging the suite)."""
    client = happybase.Connection(timeout=60_000, **gateway.connection_kwargs())
    try:
        if b"t" not in client.tables():
            client.create_table("t", {"f": {}})
        client.table("t").put(b"r", {b"f:c": b"1"})
        assert client.table("t").row(b"r") == {b"f:c": b"1"}
    finally:
        client.close()


def test_silent_sockets_beyond_the_cap_never_lock_a_new_client_out(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, workers=2, metrics_port=0) as gateway:
        silent = idle_sockets(gateway, DEFAULT_MAX_CONNECTIONS + 44)
        try:
            served_at_once(gateway)
            # Room was made by closing the longest-idle silent sockets (the newcomer took one).
            assert count_closed(silent, at_least=45) >= 45
            assert scrape(gateway).value("hbase_gateway_connections_evicted_total") >= 45
        finally:
            for sock in silent:
                sock.close()
        log = gateway.log_path.read_text()
    assert "closed the longest-idle connection (from 127.0.0.1:" in log


@pytest.mark.parametrize(
    ("transport", "protocol"),
    [("buffered", "binary"), ("framed", "compact")],
    ids=["buffered-binary", "framed-compact"],
)
def test_sockets_stalled_after_half_a_call_never_lock_a_new_client_out(
    tmp_path: Path, transport: str, protocol: str
) -> None:
    half = half_call(protocol, transport)
    with EmbeddedGateway(tmp_path, workers=2, transport=transport, protocol=protocol) as gateway:
        stalled = []
        try:
            for _ in range(500):
                sock = socket.create_connection((gateway.host, gateway.port), timeout=30)
                stalled.append(sock)
                with contextlib.suppress(OSError):  # already closed to admit a later one
                    sock.sendall(half)
            served_at_once(gateway)
            evicted = 500 - DEFAULT_MAX_CONNECTIONS + 1  # the newcomer took one slot too
            assert count_closed(stalled, at_least=evicted) >= evicted
        finally:
            for sock in stalled:
                sock.close()


def test_at_the_cap_the_longest_idle_connection_is_closed_to_admit_a_new_one(
    tmp_path: Path,
) -> None:
    with EmbeddedGateway(tmp_path, workers=1, server_args=("--max-connections", "3")) as gateway:
        first, second, third = (held_connections(gateway, 1)[0] for _ in range(3))
        (fourth,) = held_connections(gateway, 1)
        assert closed_by_server(first)
        assert still_open(second) and still_open(third)
        (fifth,) = held_connections(gateway, 1)
        assert closed_by_server(second)
        assert still_open(third) and still_open(fourth) and still_open(fifth)
        for sock in (third, fourth, fifth):
            sock.close()


def test_a_call_whose_bytes_keep_arriving_is_not_idle(tmp_path: Path) -> None:
    limit = ("--max-connections", "2")
    with EmbeddedGateway(tmp_path, workers=1, server_args=limit, metrics_port=0) as gateway:
        setup = happybase.Connection(**gateway.connection_kwargs())
        setup.create_table("t", {"f": {}})
        setup.close()
        # The setup's slot freed first: a thread still ending it counts as inside a call, and
        # would leave the slow call the longest idle when the silent one arrives.
        assert wait_for(lambda: scrape(gateway).value("hbase_gateway_connections") == 0)
        call = put_call(b"t", b"r", b"f:c", b"slowly", "binary")
        slow = socket.create_connection((gateway.host, gateway.port), timeout=30)
        slow.sendall(call[:8])
        (silent,) = held_connections(gateway, 1)  # connected after the slow call began
        for byte in call[8:28]:  # a byte every 50 ms: progress, though slow
            slow.sendall(bytes([byte]))
            time.sleep(0.05)
        newcomer = happybase.Connection(timeout=60_000, **gateway.connection_kwargs())
        assert newcomer.tables() == [b"t"]
        assert closed_by_server(silent)  # silent for a second: the longest idle
        slow.sendall(call[28:])
        assert slow.recv(1)  # the reply: the slow call was served
        assert newcomer.table("t").row(b"r") == {b"f:c": b"slowly"}
        newcomer.close()
        slow.close()


def test_a_client_that_stopped_reading_its_reply_is_idle(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, workers=1, server_args=("--max-connections", "1")) as gateway:
        setup = happybase.Connection(**gateway.connection_kwargs())
        setup.create_table("t", {"f": {}})
        rows = [b"r%03d" % i for i in range(400)]
        with setup.table("t").batch(batch_size=50) as batch:
            for row in rows:
                batch.put(row, {b"f:c": b"x" * 40_000})  # a 16 MB reply: more than buffers hold
        setup.close()
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect((gateway.host, gateway.port))
        get_rows = Hbase_thrift.Hbase.getRows_args(tableName=b"t", rows=rows, attributes={})
        stalled.sendall(encoded_call("getRows", get_rows))  # and never reads the reply
        # Refused while its call is served; admitted once the reply waits on the client.
        kwargs = gateway.connection_kwargs()
        deadline = time.monotonic() + 60
        while True:
            newcomer = happybase.Connection(timeout=60_000, autoconnect=False, **kwargs)
            try:
                newcomer.open()
                assert newcomer.tables() == [b"t"]
                break
            except (TTransportException, ConnectionError):
                assert time.monotonic() < deadline, "the stalled reader was never closed"
                time.sleep(0.1)
            finally:
                newcomer.close()
        assert closed_by_server(stalled)


def test_a_connection_inside_a_call_is_never_closed_to_admit_another(tmp_path: Path) -> None:
    server = GatewayServer(Store(tmp_path), port=0, max_connections=1)
    inside, finish = threading.Event(), threading.Event()
    table_names = server.handler.getTableNames

    def long_call() -> list[bytes]:
        inside.set()
        finish.wait(30)
        return table_names()

    server.handler.getTableNames = long_call  # a call that lasts until the test ends it
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    answers: list[object] = []
    busy = happybase.Connection(host=server.host, port=server.port)
    caller = threading.Thread(target=lambda: answers.append(busy.tables()))
    try:
        caller.start()
        assert inside.wait(30)
        newcomer = socket.create_connection((server.host, server.port), timeout=30)
        assert closed_by_server(newcomer)  # the one connection is inside a call: refused
        finish.set()
        caller.join(30)
        assert answers == [[]]
        assert server.refused == 1 and server.evicted == 0
    finally:
        finish.set()
        server.shutdown()
        serving.join(10)
        server.store.close()


def test_a_connection_is_idle_once_its_reply_is_sent_whatever_the_server_does_after(
    tmp_path: Path,
) -> None:
    server = GatewayServer(Store(tmp_path), port=0, max_connections=1)
    after_reply, finish = threading.Event(), threading.Event()

    def slow_work_after_reply() -> None:  # e.g. a scanner preparing its next reply
        after_reply.set()
        finish.wait(30)

    server.handler.run_after_reply = slow_work_after_reply
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        answered = happybase.Connection(host=server.host, port=server.port)
        assert answered.tables() == []
        assert after_reply.wait(30)
        newcomer = socket.create_connection((server.host, server.port), timeout=30)
        assert still_open(newcomer)  # admitted in the answered connection's slot
        assert server.evicted == 1 and server.refused == 0
        newcomer.close()
    finally:
        finish.set()
        server.shutdown()
        serving.join(10)
        server.store.close()


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
