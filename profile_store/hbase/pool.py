"""A happybase connection pool for the ``with`` block, embedded gateway included.

With no host the pool talks to an embedded gateway (``profile_store.hbase_gateway``) started over
``data_dir`` for the lifetime of the ``with`` block; with a host it talks to that Thrift-1 server.
"""

from __future__ import annotations

import contextlib
import queue
import select
import socket
from collections.abc import Callable, Iterator

import happybase

from profile_store.hbase.settings import HBaseSettings
from profile_store.hbase_gateway.process import EmbeddedGateway


@contextlib.contextmanager
def hbase_pool(settings: HBaseSettings) -> Iterator[happybase.ConnectionPool]:
    """A connection pool for the ``with`` block; starts and stops the embedded gateway if needed.

    happybase opens the pool's first connection right away, so an unreachable server fails here
    rather than on the first query.
    """
    gateway: EmbeddedGateway | None = None
    if settings.embedded:
        gateway = EmbeddedGateway(
            settings.data_dir,
            transport=settings.transport,
            protocol=settings.protocol,
            workers=settings.gateway_workers,
        ).start()
        host, port = gateway.host, gateway.port
    else:
        host, port = settings.host, settings.port
    pool: happybase.ConnectionPool | None = None
    try:
        pool = happybase.ConnectionPool(
            settings.pool_size,
            host=host,
            port=port,
            timeout=settings.timeout_ms,
            transport=settings.transport,
            protocol=settings.protocol,
            table_prefix=settings.table_prefix,
            compat=settings.compat,
        )
        yield pool
    finally:
        if pool is not None:
            close_idle_connections(pool)
        if gateway is not None:
            gateway.stop()


def close_idle_connections(pool: happybase.ConnectionPool) -> None:
    """Close the pool's idle connections (happybase's pool has no close())."""
    while True:
        try:
            connection = pool._queue.get_nowait()
        except queue.Empty:
            return
        connection.close()


def table_opener(
    pool: happybase.ConnectionPool, table_name: str
) -> Callable[[], contextlib.AbstractContextManager[happybase.Table]]:
    """An ``open_table`` for ``AudienceEngine`` and ``ProfileReader``: a table per call.

    Each call takes a pooled connection and returns it when the ``with`` block ends, so callers
    consume their scans inside it; each thread gets its own connection.
    """

    @contextlib.contextmanager
    def open_table() -> Iterator[happybase.Table]:
        with pool.connection() as connection:
            reopen_if_closed_by_server(connection)
            yield connection.table(table_name)

    return open_table


def reopen_if_closed_by_server(connection: happybase.Connection) -> None:
    """Reconnect a pooled connection the server closed while it sat idle.

    Thrift servers close idle connections (HBase's after 60 s, the embedded gateway's after its
    ``--idle-timeout``); happybase's pool would hand such a connection out and fail the first
    call on it. A closed socket reads as end-of-file without blocking, so the check is free.
    """
    raw = getattr(connection.transport, "sock", None)  # the socket (Cython) or its TSocket
    raw = raw if isinstance(raw, socket.socket) else getattr(raw, "sock", None)
    if not isinstance(raw, socket.socket):
        return
    try:
        readable, _, _ = select.select([raw], [], [], 0)
        closed = bool(readable) and raw.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        closed = True
    if closed:
        connection.close()
        connection._refresh_thrift_client()
        connection.open()
