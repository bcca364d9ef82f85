"""The launchers' servers listen on ports outside the kernel's ephemeral range, so that a server
restarted on its port while its clients keep reconnecting finds the port free: a client can be
given a port of that range as its own and connect to itself (``child_processes``)."""

from __future__ import annotations

import socket
from pathlib import Path

import happybase
import pytest
from reconnecting_clients import reconnecting_clients

from profile_store.launchers.apache_hbase import ApacheHBase, temporary_hbase
from profile_store.launchers.child_processes import ephemeral_port_range, free_port


def test_free_ports_lie_outside_the_ephemeral_range_and_can_be_bound():
    low, high = ephemeral_port_range()
    for _ in range(50):
        port = free_port()
        assert not low <= port <= high, f"{port} is in the ephemeral range {low}-{high}"
        with socket.socket() as server:
            server.bind(("127.0.0.1", port))


def test_free_ports_skip_a_port_something_is_bound_to(monkeypatch):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", free_port()))
        port, other = taken.getsockname()[1], free_port()
        monkeypatch.setattr(
            "profile_store.launchers.child_processes.server_port_candidates", lambda: [port, other]
        )
        assert {free_port() for _ in range(20)} == {other}


def test_the_ephemeral_range_is_the_kernels():
    text = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text()
    low, high = (int(part) for part in text.split())
    assert ephemeral_port_range() == (low, high)


@pytest.mark.jvm
def test_apache_hbase_restarted_while_clients_keep_reconnecting_starts_on_its_thrift_port():
    low, high = ephemeral_port_range()
    with temporary_hbase() as hbase:
        port = hbase.port
        assert not low <= port <= high, f"{port} is in the ephemeral range {low}-{high}"
        tables_of(hbase, create=b"kept")
        hbase.stop()

        with reconnecting_clients(port) as clients:
            restarted = ApacheHBase(hbase.data_dir, thrift_port=port).start()
            try:
                tables = tables_of(restarted)
                clients.wait_until_accepted()
            finally:
                restarted.stop(graceful=False)

    assert restarted.port == port
    assert b"kept" in tables
    assert clients.accepted
    assert clients.self_connected == 0


def tables_of(hbase: ApacheHBase, create: bytes | None = None) -> list[bytes]:
    """The table names on ``hbase``'s Thrift server, after creating ``create`` if given."""
    connection = happybase.Connection(**hbase.connection_kwargs(), timeout=60000)
    try:
        if create is not None:
            connection.create_table(create, {"f": {}})
        return connection.tables()
    finally:
        connection.close()
