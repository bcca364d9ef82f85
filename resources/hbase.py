"""HBase as a Dagster resource: a happybase ``ConnectionPool`` to a Thrift-1 server.

With no ``host`` configured the resource starts the embedded gateway
(``profile_store.hbase_gateway``) as a child process on a free port over ``data_dir``, the first
time a connection is needed, and stops it when the step ends. With a host (``HBASE_THRIFT_HOST``
in production) it talks to that server; asset code is the same either way. Settings, their
environment variables and the pool itself come from ``profile_store.hbase``, which the
command line and the HTTP services share.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict, fields
from typing import Any

import happybase
from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from profile_store.hbase.pool import hbase_pool
from profile_store.hbase.settings import DEFAULT_DATA_DIR, HBaseSettings, ThriftAddress


class HBaseResource(ConfigurableResource):
    """A pooled happybase connection to HBase's Thrift server, or to the embedded gateway."""

    host: str | None = Field(
        default=None,
        description="Thrift server host; unset starts the embedded gateway over data_dir.",
    )
    port: int = Field(default=9090, description="Thrift server port (ignored when embedded).")
    transport: str = Field(
        default="buffered",
        description="'buffered' (HBase `thrift start`, Apache HBase 2.x default) or 'framed' "
        "(`-f`/-hsha/-nonblocking; CDH-style servers).",
    )
    protocol: str = Field(
        default="binary", description="'binary' (HBase default) or 'compact' (`-c`)."
    )
    table_prefix: str | None = Field(
        default=None, description="Prefix (joined with '_') for every table name."
    )
    pool_size: int = Field(default=4, description="Connections in the happybase pool.")
    timeout_ms: int | None = Field(
        default=None, description="Socket timeout in milliseconds (None: wait forever)."
    )
    compat: str = Field(default="0.98", description="happybase compat mode (0.90 .. 0.98).")
    data_dir: str = Field(
        default=DEFAULT_DATA_DIR, description="Store directory of the embedded gateway."
    )
    gateway_workers: int | None = Field(
        default=None,
        description="Worker processes of the embedded gateway (ignored with host); unset: one "
        "per core, at most 4. Concurrent clients (Spark tasks, the pool) are then served in "
        "parallel rather than by one Python interpreter.",
    )

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _open: contextlib.ExitStack | None = PrivateAttr(default=None)
    _pool: happybase.ConnectionPool | None = PrivateAttr(default=None)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> HBaseResource:
        """Build from ``HBASE_THRIFT_*``, ``HBASE_TABLE_PREFIX``, ``PROFILES_HBASE_DATA_DIR``,
        ``PROFILES_HBASE_GATEWAY_WORKERS``."""
        return cls(**asdict(HBaseSettings.from_env(environ, **overrides)))

    @property
    def embedded(self) -> bool:
        return not self.host

    def settings(self) -> HBaseSettings:
        """The resource's settings, validated (a bad value raises ``ValueError``)."""
        return HBaseSettings(**{f.name: getattr(self, f.name) for f in fields(HBaseSettings)})

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.settings()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        self.close()

    def pool(self) -> happybase.ConnectionPool:
        """The connection pool, starting the embedded gateway on first use if needed."""
        with self._lock:
            if self._pool is None:
                stack = contextlib.ExitStack()
                self._pool = stack.enter_context(hbase_pool(self.settings()))
                self._open = stack
            return self._pool

    @contextlib.contextmanager
    def connection(self) -> Iterator[happybase.Connection]:
        """A pooled connection for the ``with`` block.

        Consume scan generators inside the block: the connection goes back to the pool (and to
        another thread) when the block ends.
        """
        with self.pool().connection() as connection:
            yield connection

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` actually used (the embedded gateway's once started)."""
        with self.connection() as connection:
            return connection.host, connection.port

    def thrift_address(self) -> ThriftAddress:
        """Where Spark executors connect to write rows themselves (started gateway included)."""
        host, port = self.address
        return ThriftAddress(host, port, self.transport, self.protocol, self.table_prefix)

    def close(self) -> None:
        """Close pooled connections and stop the embedded gateway, if this resource started it."""
        with self._lock:
            stack, self._open, self._pool = self._open, None, None
        if stack is not None:
            stack.close()
