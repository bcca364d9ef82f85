"""The gateway's network side: a threaded Thrift server speaking HBase's Thrift-1 protocol.

One thread per client connection, at most ``max_connections`` of them: at the cap the
longest-idle connection is closed to admit a newcomer (``admission``), and a newcomer is closed
at once only when every connection is inside a call; a thread that cannot be started is logged
and its connection closed, never the server's end. A connection idle for ``idle_timeout_s`` is
closed (HBase's closes after 60 s by default), long enough for happybase's pooled connections
between a pipeline's calls; thriftpy2's stock server (3 s client timeout) would drop pooled
clients. A call or string over its length bound ends the connection or the call
(``bounds``). Transport (buffered/framed) and protocol (binary/compact) are chosen at
start-up, exactly as HBase's own ``hbase thrift start [-f] [-c]``; the Cython implementations
are used where thriftpy2 has them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import socket
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from thriftpy2.protocol import TCompactProtocolFactory, TCyBinaryProtocolFactory
from thriftpy2.thrift import TApplicationException, TProcessor, TType
from thriftpy2.transport import (
    TCyBufferedTransportFactory,
    TCyFramedTransportFactory,
    TTransportException,
)

from .admission import Admission, ConnectionSlots, now_ms
from .bounds import CallTooLarge, WireBounds, oversized_string
from .client_socket import ClientSocket
from .errors import (
    GatewayAlreadyExists,
    GatewayError,
    GatewayIllegalArgument,
    GatewayInternalError,
)
from .handler import HbaseHandler
from .idl import load_idl, served_service
from .metrics import GatewayMetrics, MetricsRecorder
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
    ``IOError`` too, so one bad call never kills the connection. A string over the bound fails
    its call the same way, before the handler runs. Every answer is counted (``metrics``).
    """

    _PREFERRED = (
        (GatewayAlreadyExists, _IDL.AlreadyExists),
        (GatewayIllegalArgument, _IDL.IllegalArgument),
    )

    def __init__(
        self, service: Any, handler: HbaseHandler, metrics: MetricsRecorder, max_string: int
    ) -> None:
        super().__init__(service, handler)
        self._metrics = metrics
        self._max_string = max_string

    _handler: HbaseHandler  # TProcessor keeps the handler as an object

    # The gateway's server passes the connection too: its call and transfer counters.
    def process(  # type: ignore[override]
        self, iprot: Any, oprot: Any, connection: ClientSocket
    ) -> None:
        api, seqid, args = self._read_call(iprot)
        request_bytes = connection.call_bytes
        outcome, reply = self._run(api, args, request_bytes)
        # Counted before the reply leaves: a client holding its answer finds its call counted.
        seconds = time.perf_counter() - connection.call_started
        self._metrics.call(api, outcome, seconds, request_bytes)
        if isinstance(reply, TApplicationException):
            self.send_exception(oprot, api, reply, seqid)
        elif type(getattr(reply, "success", None)) is EncodedRows:  # rows, pre-encoded
            write_reply(oprot, api, seqid, reply.success)
        elif not reply.oneway:
            self.send_result(oprot, api, reply, seqid)
        self._metrics.transferred(*connection.take_transferred())
        if outcome != "TApplicationException":
            self._handler.run_after_reply()

    def _read_call(self, iprot: Any) -> tuple[str, int, Any]:
        """``(api, seqid, decoded args)``; the args are a ``TApplicationException`` for a
        method the IDL lacks (its arguments skipped)."""
        api, _, seqid = iprot.read_message_begin()
        if api not in self._service.thrift_services:
            iprot.skip(TType.STRUCT)
            iprot.read_message_end()
            return api, seqid, TApplicationException(TApplicationException.UNKNOWN_METHOD)
        args = getattr(self._service, api + "_args")()
        args.read(iprot)
        iprot.read_message_end()
        return api, seqid, args

    def _run(self, api: str, args: Any, request_bytes: int) -> tuple[str, Any]:
        """Run the call: ``(outcome, reply)``, the outcome a label of ``metrics`` and the
        reply the ``<api>_result`` to send, or the ``TApplicationException`` to send instead."""
        if isinstance(args, TApplicationException):
            return "TApplicationException", args
        result = getattr(self._service, api + "_result")()
        try:
            if request_bytes > self._max_string:  # only such a call can hold such a string
                self._check_strings(api, args)
            names = [spec[1] for spec in args.thrift_spec.values()]
            result.success = getattr(self._handler, api)(*(args.__dict__[n] for n in names))
        except TApplicationException as exc:
            return "TApplicationException", exc
        except GatewayInternalError as exc:
            message = f"Internal error processing {api}: {exc.message}"
            return "TApplicationException", _application_error(message)
        except GatewayError as exc:
            outcome = self._attach(result, exc, exc.message)
            if outcome is None:
                return "TApplicationException", _application_error(exc.message, unknown=True)
            return outcome, result
        except Exception as exc:
            logger.exception("Thrift call %s failed", api)
            message = f"{type(exc).__name__}: {exc}"
            outcome = self._attach(result, exc, message)
            if outcome is None:
                return "TApplicationException", _application_error(message)
            return outcome, result
        return "success", result

    def _check_strings(self, api: str, args: Any) -> None:
        found = oversized_string(args, self._max_string)
        if found is not None:
            self._metrics.oversized("string")
            path, length = found
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: {api}: {path} is {length} bytes, over the "
                f"gateway's bound of {self._max_string} bytes (--max-string-size)"
            )

    def _attach(self, result: Any, exc: Exception, message: str) -> str | None:
        """Store the matching declared exception on ``result`` and return its name; None if
        none is declared."""
        declared = {
            spec[2]: spec[1]
            for fid, spec in result.thrift_spec.items()
            if fid != 0 and spec[1] != "success"
        }
        for gateway_cls, thrift_cls in self._PREFERRED:
            if isinstance(exc, gateway_cls) and thrift_cls in declared:
                setattr(result, declared[thrift_cls], thrift_cls(message=message))
                return thrift_cls.__name__
        if _IDL.IOError in declared:
            setattr(result, declared[_IDL.IOError], _IDL.IOError(message=message))
            return "IOError"
        return None


def _application_error(message: str, unknown: bool = False) -> TApplicationException:
    kind = TApplicationException.UNKNOWN if unknown else TApplicationException.INTERNAL_ERROR
    return TApplicationException(kind, message)


DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_IDLE_TIMEOUT_S = 3600.0
LISTEN_BACKLOG = 256


def bind_listener(host: str, port: int) -> socket.socket:
    """The listening socket (port 0 picks a free one); a multi-process gateway binds it once,
    before it forks the workers that accept on it."""
    return socket.create_server((host, port), backlog=LISTEN_BACKLOG)


@dataclass
class _Client:
    """A connection being served: its thread, slot and socket."""

    thread: threading.Thread
    admission: Admission
    connection: ClientSocket
    evicted: bool = False


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
        bounds: WireBounds | None = None,
        metrics: MetricsRecorder | None = None,
        on_turn: Callable[[], None] | None = None,
        on_stop: Callable[[], None] | None = None,
    ) -> None:
        """``listener``: an already bound socket (a worker process's, inherited from the parent
        that bound it; ``host`` and ``port`` are then ignored); ``slots``: the connection cap
        shared with other processes (default: ``max_connections`` for this process alone);
        ``bounds``: the length bounds of calls and strings; ``metrics``: this process's
        recorder (default: counted and never served); ``on_turn``: called at every turn of the
        accept loop, at least every ``poll_interval`` (liveness), ``on_stop`` once it ends,
        before calls in flight are waited for."""
        if not idle_timeout_s > 0:
            raise ValueError(f"idle_timeout_s must be greater than 0, got {idle_timeout_s}")
        self.slots = slots if slots is not None else ConnectionSlots(max_connections)
        self.max_connections = self.slots.cap
        self.idle_timeout_s = idle_timeout_s
        self.bounds = bounds if bounds is not None else WireBounds()
        self.metrics = metrics if metrics is not None else GatewayMetrics(1).recorder(0)
        self.refused = 0  # connections closed at once: all busy at the cap, or no thread
        self.evicted = 0  # idle connections closed to admit a newcomer
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
        self._processor = GatewayProcessor(
            served_service(), self.handler, self.metrics, self.bounds.max_string
        )
        self._transport_factory = TRANSPORTS[transport]()
        self._protocol_factory = PROTOCOLS[protocol]()
        self._stopping = threading.Event()
        # shutdown() writes here to end serve_forever's select at once: a signal handler alone
        # would not, since Python retries an interrupted select for the rest of its timeout.
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        # Closed with the server object, never before: a shutdown() after serving ended must
        # not write into a descriptor number the process has since reused.
        weakref.finalize(self, os.close, self._wake_w)
        weakref.finalize(self, os.close, self._wake_r)
        self._clients: dict[socket.socket, _Client] = {}
        self._clients_lock = threading.Lock()
        self._on_turn = on_turn if on_turn is not None else lambda: None
        self._on_stop = on_stop if on_stop is not None else lambda: None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def serve_forever(self, poll_interval: float = 0.2) -> None:
        """Accept connections until ``shutdown()``; then wait for in-flight calls to finish.

        The listener is non-blocking and waited on with ``select``: worker processes share it,
        so a connection another worker took first is no error, and a worker holding more
        connections than another lets a pending one go to it for a moment (``defer_accept``).
        The same ``select`` watches the pipe through which another worker says it took the
        slot of one of this worker's idle connections.
        """
        self._listener.setblocking(False)
        wake = self.slots.wake_fd()
        watched: list[socket.socket | int] = [self._listener, self._wake_r]
        if wake is not None:
            watched.append(wake)
        deferred = 0
        try:
            while not self._stopping.is_set():
                self._on_turn()
                try:
                    readable, _, _ = select.select(watched, [], [], poll_interval)
                except (OSError, ValueError):
                    if self._stopping.is_set():
                        break
                    raise
                if wake is not None and wake in readable:
                    with contextlib.suppress(BlockingIOError):
                        os.read(wake, 4096)
                    self._close_evicted()
                if self._listener not in readable:
                    continue
                if deferred < _MAX_DEFERRALS and self.slots.defer_accept():
                    deferred += 1
                    time.sleep(_DEFER_S)
                    continue
                deferred = 0
                try:
                    client, address = self._listener.accept()
                except BlockingIOError:
                    continue  # another worker took it
                except OSError:
                    if self._stopping.is_set():
                        break
                    raise
                client.setblocking(True)
                self._admit(client, _peer(address))
        finally:
            self._on_stop()
            self._listener.close()
            self._drain()

    def _admit(self, client: socket.socket, peer: str) -> None:
        """Serve ``client`` on its own thread, in a free slot or the longest-idle connection's;
        close it if every connection is inside a call or no thread can be started. Either
        way the accept loop goes on."""
        admission = self.slots.admit()
        if admission is None:
            self._refuse(
                client, f"{self.max_connections} connections open (the cap), each inside a call"
            )
            return
        if admission.evicted_from == self.slots.index:
            self._close_evicted()
        elif admission.evicted_from is not None:
            self.slots.notify(admission.evicted_from)
        connection = ClientSocket(
            client,
            peer,
            self.bounds,
            framed=self.transport == "framed",
            activity=self.slots.activity(admission),
        )
        thread = threading.Thread(
            target=self._serve_client,
            args=(client, connection, admission),
            name="hbase-gateway-client",
            daemon=True,
        )
        with self._clients_lock:
            self._clients[client] = _Client(thread, admission, connection)
        try:
            self._start(thread)
        except RuntimeError as error:  # "can't start new thread": out of memory or a ulimit
            with self._clients_lock:
                self._clients.pop(client, None)
            self.slots.release(admission)
            self._refuse(client, f"no thread could be started ({error})")
            return
        self.metrics.connection("admitted")

    def _start(self, thread: threading.Thread) -> None:
        thread.start()

    def _refuse(self, client: socket.socket, why: str) -> None:
        self.refused += 1
        self.metrics.connection("refused")
        if self.refused == 1 or self.refused % 100 == 0:
            logger.warning("connection refused: %s; %d refused so far", why, self.refused)
        with contextlib.suppress(OSError):
            client.close()

    def _close_evicted(self) -> None:
        """Close this process's connections whose slots went to newcomers. Shutting the socket
        down wakes the connection's thread, which then ends as for a client that left."""
        with self._clients_lock:
            for client, served in self._clients.items():
                if served.evicted or self.slots.holds(served.admission):
                    continue
                served.evicted = True
                idle_s = (now_ms() - served.connection.last_progress_ms) / 1000
                self.evicted += 1
                self.metrics.connection("evicted")  # counted before the client can see it
                with contextlib.suppress(OSError):
                    client.shutdown(socket.SHUT_RDWR)
                if self.evicted == 1 or self.evicted % 100 == 0:
                    logger.warning(
                        "closed the longest-idle connection (from %s, idle %.1f s) to admit a new "
                        "client: %d connections open (the cap); %d closed so far by this process",
                        served.connection.peer,
                        idle_s,
                        self.max_connections,
                        self.evicted,
                    )

    def shutdown(self) -> None:
        """Stop accepting and end idle connections; safe to call from a signal handler, and
        takes effect at once (not at the next poll)."""
        self._stopping.set()
        with contextlib.suppress(BlockingIOError):  # the pipe is full: woken already
            os.write(self._wake_w, b"\0")

    def _drain(self, timeout: float = 10.0) -> None:
        with self._clients_lock:
            clients = list(self._clients.items())
        for client, _ in clients:
            # SHUT_RD wakes idle readers while a reply still in flight can be written.
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RD)
        for _, served in clients:
            served.thread.join(timeout)

    def _serve_client(
        self, client: socket.socket, connection: ClientSocket, admission: Admission
    ) -> None:
        client.settimeout(self.idle_timeout_s)
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        trans = self._transport_factory.get_transport(connection)
        proto = self._protocol_factory.get_protocol(trans)
        try:
            while not self._stopping.is_set():
                self._processor.process(proto, proto, connection)
        except CallTooLarge as exc:
            self.metrics.oversized("frame")
            logger.warning("closed the connection from %s: %s", connection.peer, exc)
        except (TTransportException, EOFError, ConnectionError, TimeoutError):
            pass  # the client went away, stayed idle past idle_timeout_s, or was evicted
        except Exception:
            logger.exception("client connection failed")
        finally:
            # The slot is freed before the socket closes: a client that sees the close may
            # connect again at once and must find the slot free.
            with self._clients_lock:
                self._clients.pop(client, None)
            self.slots.release(admission)
            self.metrics.transferred(*connection.take_transferred())
            with contextlib.suppress(Exception):  # the socket may already be gone
                trans.close()


def _peer(address: Any) -> str:
    """``host:port`` of a client (IPv6 hosts in brackets)."""
    host, port = address[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
