"""HBase as a Dagster resource: a happybase ``ConnectionPool`` to a Thrift-1 server.

With no ``host`` configured the resource starts the embedded gateway
(``profile_store.hbase_gateway``) as a child process on a free port over ``data_dir``, the first
time a connection is needed, and stops it when the step ends. With a host (``HBASE_THRIFT_HOST``
in production) it talks to that server; asset code is the same either way.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import happybase
from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from profile_store.hbase_gateway.process import EmbeddedGateway

TRANSPORTS = ("buffered", "framed")
PROTOCOLS = ("binary", "compact")

ENV_VARS = {
    "host": "HBASE_THRIFT_HOST",
    "port": "HBASE_THRIFT_PORT",
    "transport": "HBASE_THRIFT_TRANSPORT",
    "protocol": "HBASE_THRIFT_PROTOCOL",
    "table_prefix": "HBASE_TABLE_PREFIX",
}
"""The one place that maps environment variables onto resource fields."""


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
        default="data/hbase", description="Store directory of the embedded gateway."
    )

    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _gateway: EmbeddedGateway | None = PrivateAttr(default=None)
    _pool: happybase.ConnectionPool | None = PrivateAttr(default=None)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> HBaseResource:
        """Build from ``HBASE_THRIFT_*`` / ``HBASE_TABLE_PREFIX``; ``overrides`` win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for field_name, var in ENV_VARS.items():
            raw = env.get(var)
            if raw:
                values[field_name] = int(raw) if field_name == "port" else raw
        values.update(overrides)
        return cls(**values)

    @property
    def embedded(self) -> bool:
        return not self.host

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self._check_settings()

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        self.close()

    def _check_settings(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {self.transport!r}")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        if self.pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {self.pool_size}")

    def pool(self) -> happybase.ConnectionPool:
        """The connection pool, starting the embedded gateway on first use if needed."""
        with self._lock:
            if self._pool is None:
                self._check_settings()
                if self.embedded:
                    self._gateway = EmbeddedGateway(
                        self.data_dir, transport=self.transport, protocol=self.protocol
                    ).start()
                    host, port = self._gateway.host, self._gateway.port
                else:
                    host, port = self.host, self.port
                try:
                    self._pool = happybase.ConnectionPool(
                        self.pool_size,
                        host=host,
                        port=port,
                        timeout=self.timeout_ms,
                        transport=self.transport,
                        protocol=self.protocol,
                        table_prefix=self.table_prefix,
                        compat=self.compat,
                    )
                except BaseException:
                    self._stop_gateway()
                    raise
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
        if self.embedded:
            self.pool()
            assert self._gateway is not None and self._gateway.port is not None
            return self._gateway.host, self._gateway.port
        assert self.host is not None
        return self.host, self.port

    def close(self) -> None:
        """Close pooled connections and stop the embedded gateway, if this resource started it."""
        with self._lock:
            pool, self._pool = self._pool, None
            if pool is not None:
                # happybase's pool has no close(); its idle connections wait in ``_queue``.
                while True:
                    try:
                        connection = pool._queue.get_nowait()
                    except queue.Empty:
                        break
                    connection.close()
            self._stop_gateway()

    def _stop_gateway(self) -> None:
        gateway, self._gateway = self._gateway, None
        if gateway is not None:
            gateway.stop()
