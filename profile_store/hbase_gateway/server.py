"""The gateway's network side: a threaded Thrift server speaking HBase's Thrift-1 protocol.

One thread per client connection, at most ``max_connections`` of them: a connection beyond the
cap is closed at once (HBase's own Thrift server also rejects what its bounded pool cannot take),
and a thread that cannot be started is logged and its connection closed, never the server's end.
A connection idle for ``idle_timeout_s`` is closed (HBase's closes after 60 s by default), long
enough for happybase's pooled connections between a pipeline's calls, so idle sockets cannot
hold the server's threads forever; thriftpy2's stock server (3 s client timeout) would drop
pooled clients. Transport (buffered/framed) and protocol (binary/compact) are chosen at start-up,
exactly as HBase's own ``hbase thrift start [-f] [-c]``; the Cython implementations are used
where thriftpy2 has them.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import threading
import time
from typing import Any

from thriftpy2.protocol import TCompactProtocolFactory, TCyBinaryProtocolFactory
from thriftpy2.thrift import TApplicationException, TProcessor
from thriftpy2.transport import (
    TCyBufferedTransportFactory,
    TCyFramedTransportFactory,
    TSocket,
    TTransportException,
)

from .errors import (
    GatewayAlreadyExists,
    GatewayError,
    GatewayIllegalArgument,
    GatewayInternalError,
)
from .handler import HbaseHandler
from .idl import load_idl
from .store import Store
from .wire import EncodedRows, write_reply

logger = logging.getLogger(__name__)

TRANSPORTS = {"buffered": TCyBufferedTransportFactory, "framed": TCyFramedTransportFactory}
PROTOCOLS = {"binary": TCyBinaryProtocolFactory, "compact": TCompactProtocolFactory}

_IDL = load_idl()
_DEFER_S = 0.002  # a busier worker's pause before it looks at the listener again
_MAX_DEFERRALS = 10  # at most this many pauses per connection: a stalled peer cannot stall us


class GatewayProcessor(TProcessor):
    """A ``TProcessor`` that reports every failure to the client instead of dropping it.

    Gateway errors become the IDL exception HBase would raise (falling back to ``IOError`` where
    a call does not declare the preferred one); unexpected faults are logged and sent as
    ``IOError`` too, so one bad call never kills the connection.
    """

    _PREFERRED = (
        (GatewayAlreadyExists, _IDL.AlreadyExists),
        (GatewayIllegalArgument, _IDL.IllegalArgument),
    )

    def process(self, iprot: Any, oprot: Any) -> None:
        api, seqid, result, call = self.process_in(iprot)
        if isinstance(result, TApplicationException):
            self.send_exception(oprot, api, result, seqid)
            return
        try:
            result.success = call()
        except TApplicationException as exc:
            self.send_exception(oprot, api, exc, seqid)
            return
        except GatewayInternalError as exc:
            message = f"Internal error processing {api}: {exc.message}"
            self._send_application_error(oprot, api, seqid, message)
            return
        except GatewayError as exc:
            if not self._attach(result, exc, exc.message):
                self._send_application_error(oprot, api, seqid, exc.message, unknown=True)
                return
        except Exception as exc:
            logger.exception("Thrift call %s failed", api)
            message = f"{type(exc).__name__}: {exc}"
            if not self._attach(result, exc, message):
                self._send_application_error(oprot, api, seqid, message)
                return
        if type(getattr(result, "success", None)) is EncodedRows:  # a scan reply, pre-encoded
            write_reply(oprot, api, seqid, result.success)
        elif not result.oneway:
            self.send_result(oprot, api, result, seqid)
        self._handler.run_after_reply()

    def _send_application_error(
        self, oprot: Any, api: str, seqid: int, message: str, unknown: bool = False
    ) -> None:
        kind = TApplicationException.UNKNOWN if unknown else TApplicationException.INTERNAL_ERROR
        self.send_exception(oprot, api, TApplicationException(kind, message), seqid)

    def _attach(self, result: Any, exc: Exception, message: str) -> bool:
        """Store the matching declared exception on ``result``; False if none is declared."""
        declared = {
            spec[2]: spec[1]
            for fid, spec in result.thrift_spec.items()
            if fid != 0 and spec[1] != "success"
        }
        for gateway_cls, thrift_cls in self._PREFERRED:
            if isinstance(exc, gateway_cls) and thrift_cls in declared:
                setattr(result, declared[thrift_cls], thrift_cls(message=message))
                return True
        if _IDL.IOError in declared:
            setattr(result, declared[_IDL.IOError], _IDL.IOError(message=message))
            return True
        return False


DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_IDLE_TIMEOUT_S = 3600.0
LISTEN_BACKLOG = 256


def bind_listener(host: str, port: int) -> socket.socket:
    """The listening socket (port 0 picks a free one); a multi-process gateway binds it once,
    before it forks the workers that accept on it."""
    return socket.create_server((host, port), backlog=LISTEN_BACKLOG)


class ConnectionSlots:
    """The connection cap of one process: a counter under a lock.

    ``workers.SharedSlots`` keeps the same cap across the worker processes of one gateway.
    """

    def __init__(self, cap: int) -> None:
        if cap < 1:
            raise ValueError(f"max_connections must be at least 1, got {cap}")
        self.cap = cap
        self._open = 0
        self._lock = threading.Lock()

    def acquire(self) -> bool:
        """Take a slot for a new connection; False if ``cap`` are open."""
        with self._lock:
            if self._open >= self.cap:
                return False
            self._open += 1
            return True

    def release(self) -> None:
        with self._lock:
            self._open -= 1

    def defer_accept(self) -> bool:
        """Whether to leave the next connection to a less busy process (never, alone)."""
        return False


class GatewayServer:
    """Listens on ``host:port`` (port 0 picks a free one) and serves until ``shutdown()``."""

    def __init__(
        self,
        store: Store,
        host: str = "127.0.0.1",
        port: int = 9090,
        transport: str = "buffered",
        protocol: str = "binary",
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        *,
        listener: socket.socket | None = None,
        slots: ConnectionSlots | None = None,
    ) -> None:
        """``listener``: an already bound socket (a worker process's, inherited from the parent
        that bound it; ``host`` and ``port`` are then ignored); ``slots``: the connection cap
        shared with other processes (default: ``max_connections`` for this process alone)."""
        if not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be greater than 0, got {idle_timeout_s}")
        self._slots = slots if slots is not None else ConnectionSlots(max_connections)
        self.max_connections = self._slots.cap
        self.idle_timeout_s = idle_timeout_s
        self.refused = 0  # connections closed at once: over the cap or no thread for them
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {sorted(TRANSPORTS)}, got {transport!r}")
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {sorted(PROTOCOLS)}, got {protocol!r}")
        self.store = store
        self.transport = transport
        self.protocol = protocol
        self._listener = listener if listener is not None else bind_listener(host, port)
        self.host, self.port = self._listener.getsockname()[:2]
        self.handler = HbaseHandler(
            store, server_name=self.host, port=self.port, encode_rows=protocol == "binary"
        )
        self._processor = GatewayProcessor(_IDL.Hbase, self.handler)
        self._transport_factory = TRANSPORTS[transport]()
        self._protocol_factory = PROTOCOLS[protocol]()
        self._stopping = threading.Event()
        self._clients: dict[socket.socket, threading.Thread] = {}
        self._clients_lock = threading.Lock()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def serve_forever(self, poll_interval: float = 0.2) -> None:
        """Accept connections until ``shutdown()``; then wait for in-flight calls to finish.

        The listener is non-blocking and waited on with ``select``: worker processes share it,
        so a connection another worker took first is no error, and a worker holding more
        connections than another lets a pending one go to it for a moment (``defer_accept``).
        """
        self._listener.setblocking(False)
        deferred = 0
        try:
            while not self._stopping.is_set():
                try:
                    readable, _, _ = select.select([self._listener], [], [], poll_interval)
                except (OSError, ValueError):
                    if self._stopping.is_set():
                        break
                    raise
                if not readable:
                    continue
                if deferred < _MAX_DEFERRALS and self._slots.defer_accept():
                    deferred += 1
                    time.sleep(_DEFER_S)
                    continue
                deferred = 0
                try:
                    client, _ = self._listener.accept()
                except BlockingIOError:
                    continue  # another worker took it
                except OSError:
                    if self._stopping.is_set():
                        break
                    raise
                client.setblocking(True)
                self._admit(client)
        finally:
            self._listener.close()
            self._drain()

    def _admit(self, client: socket.socket) -> None:
        """Serve ``client`` on its own thread, or close it if the cap is reached or no thread
        can be started; either way the accept loop goes on."""
        if not self._slots.acquire():
            self._refuse(client, f"{self.max_connections} connections open (the cap)")
            return
        thread = threading.Thread(
            target=self._serve_client, args=(client,), name="hbase-gateway-client", daemon=True
        )
        with self._clients_lock:
            self._clients[client] = thread
        try:
            self._start(thread)
        except RuntimeError as error:  # "can't start new thread": out of memory or a ulimit
            with self._clients_lock:
                self._clients.pop(client, None)
            self._slots.release()
            self._refuse(client, f"no thread could be started ({error})")

    def _start(self, thread: threading.Thread) -> None:
        thread.start()

    def _refuse(self, client: socket.socket, why: str) -> None:
        self.refused += 1
        if self.refused == 1 or self.refused % 100 == 0:
            logger.warning("connection refused: %s; %d refused so far", why, self.refused)
        with contextlib.suppress(OSError):
            client.close()

    def shutdown(self) -> None:
        """Stop accepting and end idle connections; safe to call from a signal handler."""
        self._stopping.set()

    def _drain(self, timeout: float = 10.0) -> None:
        with self._clients_lock:
            clients = list(self._clients.items())
        for client, _ in clients:
            # SHUT_RD wakes idle readers while a reply still in flight can be written.
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RD)
        for _, thread in clients:
            thread.join(timeout)

    def _serve_client(self, client: socket.socket) -> None:
        client.settimeout(self.idle_timeout_s)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        trans = self._transport_factory.get_transport(TSocket(sock=client))
        proto = self._protocol_factory.get_protocol(trans)
        try:
            while not self._stopping.is_set():
                self._processor.process(proto, proto)
        except (TTransportException, EOFError, ConnectionError, TimeoutError):
            pass  # the client went away or stayed idle past idle_timeout_s
        except Exception:
            logger.exception("client connection failed")
        finally:
            # The slot is freed before the socket closes: a client that sees the close may
            # connect again at once and must find the slot free.
            with self._clients_lock:
                self._clients.pop(client, None)
            self._slots.release()
            with contextlib.suppress(Exception):  # the socket may already be gone
                trans.close()
