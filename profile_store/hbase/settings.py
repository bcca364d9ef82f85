"""Where HBase is and how to talk to it, from the environment: one reading for the Dagster
resource, the command line and the HTTP service.

``HBASE_THRIFT_HOST`` names a Thrift-1 server (a real HBase cluster's ``hbase thrift start``);
without it the embedded gateway runs over ``PROFILES_HBASE_DATA_DIR``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import happybase

from profile_store.hbase.reconnecting import ReconnectingConnection
from profile_store.settings.definitions import HBASE_GATEWAY_WORKERS, HBASE_THRIFT_PORT

TRANSPORTS = ("buffered", "framed")
PROTOCOLS = ("binary", "compact")
DEFAULT_DATA_DIR = "data/hbase"

ENV_VARS = {
    "host": "HBASE_THRIFT_HOST",
    "port": "HBASE_THRIFT_PORT",
    "transport": "HBASE_THRIFT_TRANSPORT",
    "protocol": "HBASE_THRIFT_PROTOCOL",
    "table_prefix": "HBASE_TABLE_PREFIX",
    "data_dir": "PROFILES_HBASE_DATA_DIR",
    "gateway_workers": "PROFILES_HBASE_GATEWAY_WORKERS",
}
"""Environment variable of each setting (the same names the Dagster resource reads)."""

_DEFINED = {"port": HBASE_THRIFT_PORT, "gateway_workers": HBASE_GATEWAY_WORKERS}
"""The settings read through their definition (type and range)."""


@dataclass(frozen=True)
class ThriftAddress:
    """How a Spark executor reaches HBase's Thrift server (picklable, unlike a connection)."""

    host: str
    port: int
    transport: str = "buffered"
    protocol: str = "binary"
    table_prefix: str | None = None

    def connect(self) -> happybase.Connection:
        """A connection that reopens itself when the server closed it (``reconnecting``)."""
        return ReconnectingConnection(
            host=self.host,
            port=self.port,
            transport=self.transport,
            protocol=self.protocol,
            table_prefix=self.table_prefix,
        )


@dataclass(frozen=True)
class HBaseSettings:
    """Where HBase is and how to talk to it; ``host=None`` means the embedded gateway."""

    host: str | None = None
    port: int = 9090
    transport: str = "buffered"
    protocol: str = "binary"
    table_prefix: str | None = None
    pool_size: int = 4
    timeout_ms: int | None = None
    data_dir: str = DEFAULT_DATA_DIR
    compat: str = "0.98"
    gateway_workers: int | None = None
    """Worker processes of the embedded gateway (None: its default, ``hbase-gateway --workers``)."""

    def __post_init__(self) -> None:
        if self.transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {TRANSPORTS}, got {self.transport!r}")
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        if not 0 < self.port < 65536:
            raise ValueError(f"port must be between 1 and 65535, got {self.port}")
        if self.pool_size < 1:
            raise ValueError(f"pool_size must be at least 1, got {self.pool_size}")
        if self.timeout_ms is not None and self.timeout_ms < 1:
            raise ValueError(f"timeout_ms must be positive, got {self.timeout_ms}")
        if self.gateway_workers is not None and self.gateway_workers < 1:
            raise ValueError(f"gateway_workers must be at least 1, got {self.gateway_workers}")

    @property
    def embedded(self) -> bool:
        return not self.host

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> HBaseSettings:
        """Settings from ``ENV_VARS`` (unset or empty: the default); non-None ``overrides`` win."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for name, var in ENV_VARS.items():
            value = _DEFINED[name].read(env) if name in _DEFINED else env.get(var)
            if value not in (None, ""):
                values[name] = value
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise TypeError(f"unknown HBase settings: {', '.join(unknown)}")
        values.update({name: value for name, value in overrides.items() if value is not None})
        return cls(**values)

    def with_overrides(self, **overrides: Any) -> HBaseSettings:
        """A copy with every non-None override applied."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def describe(self) -> str:
        """One line for logs: where the data comes from."""
        if self.embedded:
            return f"embedded gateway over {self.data_dir}"
        return f"{self.host}:{self.port} ({self.transport}/{self.protocol})"
