"""Connections that survive the server: reopened when closed while idle, a call repeated once
on a new connection only when repeating it cannot change what is stored.

Against the real embedded gateway: its ``--idle-timeout`` closes idle connections as HBase's
Thrift server does after 60 s; ``ClosingProxy`` closes a connection in the middle of a call.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import happybase
import pytest
from closing_proxy import ClosingProxy
from thriftpy2.transport import TTransportException

from profile_store.hbase.pool import hbase_pool
from profile_store.hbase.reconnecting import ReconnectingConnection
from profile_store.hbase.settings import HBaseSettings, ThriftAddress
from profile_store.hbase_gateway.process import EmbeddedGateway
from resources.hbase import HBaseResource

IDLE_TIMEOUT_S = 0.5
TABLE = "reconnecting"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedGateway]:
    """A gateway that closes a connection idle for half a second."""
    with EmbeddedGateway(
        tmp_path_factory.mktemp("reconnecting"),
        server_args=("--idle-timeout", str(IDLE_TIMEOUT_S)),
    ) as running:
        connection = happybase.Connection(**running.connection_kwargs())
        connection.create_table(TABLE, {"f": {"max_versions": 3}})
        connection.close()
        yield running


@pytest.fixture
def proxy(gateway: EmbeddedGateway) -> Iterator[ClosingProxy]:
    closing = ClosingProxy((gateway.host, gateway.port))
    yield closing
    closing.close()


@pytest.fixture
def through_proxy(proxy: ClosingProxy) -> Iterator[ReconnectingConnection]:
    connection = ReconnectingConnection(host="127.0.0.1", port=proxy.port)
    yield connection
    connection.close()


def idle_past_the_timeout() -> None:
    time.sleep(IDLE_TIMEOUT_S * 3)


def test_a_plain_happybase_connection_fails_after_the_server_closed_it_while_idle(
    gateway: EmbeddedGateway,
) -> None:
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.tables()
    idle_past_the_timeout()
    with pytest.raises(TTransportException):
        connection.tables()
    connection.close()


def test_a_connection_the_server_closed_while_idle_is_reopened_before_its_next_call(
    gateway: EmbeddedGateway,
) -> None:
    connection = ReconnectingConnection(**gateway.connection_kwargs())
    connection.table(TABLE).put(b"idle", {b"f:c": b"1"})
    idle_past_the_timeout()
    assert connection.table(TABLE).row(b"idle") == {b"f:c": b"1"}
    connection.close()


def test_a_pooled_connection_the_server_closed_while_idle_is_reopened(
    gateway: EmbeddedGateway,
) -> None:
    settings = HBaseSettings(host=gateway.host, port=gateway.port, pool_size=1)
    with hbase_pool(settings) as pool:
        with pool.connection() as connection:
            assert TABLE.encode() in connection.tables()
        idle_past_the_timeout()
        with pool.connection() as connection:
            assert TABLE.encode() in connection.tables()


def test_the_dagster_resource_hands_out_connections_that_survive_an_idle_close(
    gateway: EmbeddedGateway,
) -> None:
    resource = HBaseResource(host=gateway.host, port=gateway.port, pool_size=1)
    try:
        with resource.connection() as connection:
            connection.tables()
            idle_past_the_timeout()  # inside one block, as between two calls of an asset
            assert TABLE.encode() in connection.tables()
    finally:
        resource.close()


def test_an_executors_connection_survives_an_idle_close(gateway: EmbeddedGateway) -> None:
    connection = ThriftAddress(gateway.host, gateway.port).connect()
    connection.tables()
    idle_past_the_timeout()
    assert TABLE.encode() in connection.tables()
    connection.close()


def test_a_read_on_a_connection_closed_under_it_is_made_once_more(
    proxy: ClosingProxy, through_proxy: ReconnectingConnection
) -> None:
    table = through_proxy.table(TABLE)
    table.put(b"read-again", {b"f:c": b"v"})
    proxy.close_on_next_request()
    assert table.row(b"read-again") == {b"f:c": b"v"}
    assert proxy.requests_closed == 1
    assert proxy.connections == 2


def test_a_scanner_opened_on_a_connection_closed_under_it_is_opened_once_more(
    proxy: ClosingProxy, through_proxy: ReconnectingConnection
) -> None:
    table = through_proxy.table(TABLE)
    table.put(b"scan-again", {b"f:c": b"v"})
    proxy.close_on_next_request()
    assert list(table.scan(row_prefix=b"scan-again")) == [(b"scan-again", {b"f:c": b"v"})]
    assert proxy.requests_closed == 1


def test_a_put_with_its_own_timestamp_is_made_once_more(
    proxy: ClosingProxy, through_proxy: ReconnectingConnection
) -> None:
    table = through_proxy.table(TABLE)
    proxy.close_on_next_request()
    table.put(b"stamped", {b"f:c": b"v"}, timestamp=1_000)
    assert proxy.requests_closed == 1
    assert table.cells(b"stamped", b"f:c", versions=3, include_timestamp=True) == [(b"v", 1_000)]


def test_a_put_stamped_by_the_server_is_not_repeated_when_closed_under_it(
    proxy: ClosingProxy, through_proxy: ReconnectingConnection
) -> None:
    table = through_proxy.table(TABLE)
    proxy.close_on_next_request()
    with pytest.raises(TTransportException):
        table.put(b"server-stamped", {b"f:c": b"v"})
    assert table.row(b"server-stamped") == {}  # usable again, and nothing was written twice


def test_an_increment_is_not_repeated_when_closed_under_it(
    proxy: ClosingProxy, through_proxy: ReconnectingConnection
) -> None:
    table = through_proxy.table(TABLE)
    proxy.close_on_next_request()
    with pytest.raises(TTransportException):
        table.counter_inc(b"counted", b"f:n")
    assert table.counter_get(b"counted", b"f:n") == 0
