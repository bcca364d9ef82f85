"""happybase connections that survive a Thrift server closing them.

HBase's Thrift server closes a connection idle for 60 s
(``hbase.thrift.server.socket.read.timeout``), the embedded gateway after its ``--idle-timeout``;
a server restart closes every connection. A plain happybase connection learns of it only when
its next call fails with ``TSocket read 0 bytes``, which at production volumes is any step with
a minute of Spark work between two HBase calls. So every connection of the project (the Dagster
resource's pool, the command line, the service, the stream jobs, erasure and the Spark
executors' writers) is a ``ReconnectingConnection``:

* before each Thrift call it checks, without blocking, whether the server closed the socket, and
  opens a new one if so (a closed socket reads as end-of-file at once, so the check costs a
  ``select`` and nothing more);
* when a call fails because the connection was closed under it, it reopens the connection, and
  calls once more only if the call is idempotent (``RETRIED_ONCE``): reads, the opening of a
  scanner, and mutations and deletes with an explicit timestamp, which leave the same cells
  however often they are applied. Other calls (puts stamped by the server, increments,
  check-and-put, table creation, the next batch of an open scanner) raise, since the server may
  have applied them before the connection broke; the connection is usable again all the same.
"""

from __future__ import annotations

import logging
import queue
import select
import socket
import threading
from collections.abc import Callable
from typing import Any

import happybase
from thriftpy2.transport import TTransportException

logger = logging.getLogger(__name__)

RETRIED_ONCE = frozenset(
    {
        # reads
        "getTableNames",
        "getColumnDescriptors",
        "getTableRegions",
        "isTableEnabled",
        "get",
        "getVer",
        "getVerTs",
        "getRow",
        "getRowWithColumns",
        "getRowTs",
        "getRowWithColumnsTs",
        "getRows",
        "getRowsWithColumns",
        "getRowsTs",
        "getRowsWithColumnsTs",
        "getRowOrBefore",
        "getRegionInfo",
        # a scanner's opening (a scanner opened by the failed attempt expires on its lease)
        "scannerOpen",
        "scannerOpenWithScan",
        "scannerOpenWithStop",
        "scannerOpenWithPrefix",
        "scannerOpenTs",
        "scannerOpenWithStopTs",
        # writes with an explicit timestamp: the same cells however often they are applied
        "mutateRowTs",
        "mutateRowsTs",
        "deleteAllTs",
        "deleteAllRowTs",
    }
)
"""Thrift-1 calls repeated once on a new connection when the old one was closed under them."""

CLOSED_ERRORS = (TTransportException, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
"""What a call on a connection the server closed raises (read 0 bytes, or a failed send)."""


class ReconnectingConnection(happybase.Connection):
    """A ``happybase.Connection`` that reopens itself when the server closed it (module doc)."""

    client: Any  # happybase's Thrift client (untyped), wrapped in a _ReconnectingClient

    def _refresh_thrift_client(self) -> None:
        super()._refresh_thrift_client()
        self.client = _ReconnectingClient(self, self.client)

    def reconnect(self) -> None:
        """Close the socket and open a new one (a new Thrift client over it)."""
        self.close()
        self._refresh_thrift_client()
        self.open()

    def closed_by_server(self) -> bool:
        """Has the server closed this (open) connection? Never blocks."""
        raw = _raw_socket(self)
        if raw is None:
            return False
        try:
            readable, _, _ = select.select([raw], [], [], 0)
            return bool(readable) and raw.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):  # reset by the peer, or already closed here
            return True


class _ReconnectingClient:
    """The Thrift client of a ``ReconnectingConnection``: each call checks, calls, retries."""

    def __init__(self, connection: ReconnectingConnection, client: Any) -> None:
        self._connection = connection
        self._client = client

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self._client, name)
        if not callable(method):
            return method
        connection = self._connection

        def call(*args: Any, **kwargs: Any) -> Any:
            if connection.closed_by_server():
                connection.reconnect()
                return getattr(connection.client._client, name)(*args, **kwargs)
            try:
                return method(*args, **kwargs)
            except CLOSED_ERRORS as error:
                connection.reconnect()
                if name not in RETRIED_ONCE:
                    raise
                logger.info("%s failed on a closed connection (%r); once more", name, error)
                return getattr(connection.client._client, name)(*args, **kwargs)
            except (TimeoutError, OSError):
                # The connection's state is unknown (a late answer would be read as the next
                # call's): a new one for the next call, and the error for this one.
                connection.reconnect()
                raise

        # Kept: the next call of this name finds it without building it again (a reconnect
        # makes a new client, and with it new calls).
        setattr(self, name, call)
        return call


def _raw_socket(connection: happybase.Connection) -> socket.socket | None:
    """The connection's socket when open: the transport's own (Cython) or its TSocket's."""
    raw = getattr(connection.transport, "sock", None)
    raw = raw if isinstance(raw, socket.socket) else getattr(raw, "sock", None)
    return raw if isinstance(raw, socket.socket) and raw.fileno() >= 0 else None


class ReconnectingPool(happybase.ConnectionPool):
    """happybase's thread-safe pool, of ``ReconnectingConnection``s.

    happybase builds its pool's connections from a module-level name, so this constructor is
    its own: the same queue, thread-local ownership and eager first connection.
    """

    def __init__(self, size: int, **kwargs: Any) -> None:
        if not isinstance(size, int) or size < 1:
            raise ValueError(f"pool size must be a positive integer, got {size!r}")
        self._lock = threading.Lock()
        self._queue: queue.LifoQueue[ReconnectingConnection] = queue.LifoQueue(maxsize=size)
        self._thread_connections = threading.local()
        for _ in range(size):
            self._queue.put(ReconnectingConnection(autoconnect=False, **kwargs))
        # Opened at once, so that an unreachable server fails here, not on the first query.
        with self.connection():
            pass

    def close(self) -> None:
        """Close the idle connections (happybase's pool has no close())."""
        while True:
            try:
                connection = self._queue.get_nowait()
            except queue.Empty:
                return
            connection.close()
