"""A happybase connection pool for the ``with`` block, embedded gateway included.

With no host the pool talks to an embedded gateway (``profile_store.hbase_gateway``) started over
``data_dir`` for the lifetime of the ``with`` block; with a host it talks to that Thrift-1 server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import happybase

from profile_store.hbase.reconnecting import ReconnectingPool
from profile_store.hbase.settings import HBaseSettings
from profile_store.hbase_gateway.process import EmbeddedGateway


@contextlib.contextmanager
def hbase_pool(settings: HBaseSettings) -> Iterator[ReconnectingPool]:
    """A connection pool for the ``with`` block; starts and stops the embedded gateway if needed.

    Its connections reopen themselves when the server closed them (``reconnecting``).

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
        assert settings.host is not None  # not embedded: a host is set
        host, port = settings.host, settings.port
    pool: ReconnectingPool | None = None
    try:
        pool = ReconnectingPool(
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
            pool.close()
        if gateway is not None:
            gateway.stop()


def table_opener(
    pool: happybase.ConnectionPool, table_name: str
) -> Callable[[], contextlib.AbstractContextManager[happybase.Table]]:
    """An ``open_table`` for ``AudienceEngine`` and ``ProfileReader``: a table per call.

    Each call takes a pooled connection and returns it when the ``with`` block ends, so callers
    consume their scans inside it; each thread gets its own connection. (A connection the server
    closed is reopened by the pool's connections themselves: ``hbase_pool``.)
    """

    @contextlib.contextmanager
    def open_table() -> Iterator[happybase.Table]:
        with pool.connection() as connection:
            yield connection.table(table_name)

    return open_table
