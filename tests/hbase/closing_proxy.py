"""A TCP proxy in front of a Thrift server that can close a connection in the middle of a call.

A server closing an idle connection is easy to arrange (a short idle timeout); a connection
closed after the client's check and before the answer is not. This proxy relays bytes both ways
and, once armed with ``close_on_next_request()``, swallows the next request it receives and
closes that client's connection instead of forwarding it: the server never saw the call.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class ClosingProxy:
    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._armed = threading.Event()
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self.connections = 0
        self.requests_closed = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def close_on_next_request(self) -> None:
        self._armed.set()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:  # closed
                return
            server = socket.create_connection(self.upstream)
            with self._lock:
                self.connections += 1
                self._sockets += [client, server]
            threading.Thread(
                target=self._relay_requests, args=(client, server), daemon=True
            ).start()
            threading.Thread(target=self._relay, args=(server, client), daemon=True).start()

    def _relay_requests(self, client: socket.socket, server: socket.socket) -> None:
        while data := _receive(client):
            if self._armed.is_set():
                self._armed.clear()
                with self._lock:
                    self.requests_closed += 1
                _close(client, server)
                return
            server.sendall(data)
        _close(client, server)

    def _relay(self, source: socket.socket, target: socket.socket) -> None:
        while data := _receive(source):
            try:
                target.sendall(data)
            except OSError:
                break
        _close(source, target)

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            _close(*self._sockets)


def _receive(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except OSError:
        return b""


def _close(*sockets: socket.socket) -> None:
    for sock in sockets:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        sock.close()
