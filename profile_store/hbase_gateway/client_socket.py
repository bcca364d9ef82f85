"""A client connection's socket, where thriftpy2's transports read and write it.

It stands where thriftpy2's ``TSocket`` would, below the (Cython) buffered or framed transport,
so it sees every byte of the connection, which thriftpy2's codecs do not expose:

* progress, for admission: before a read or a write blocks, the connection's slot says since
  when it has made none; once bytes moved, that it is working (``admission``);
* the call bound: the bytes received since the last reply are one call, and past
  ``max_frame`` the connection ends before thriftpy2 gets the byte that passed it; framed
  headers are checked as they pass (``bounds``);
* the bytes each way and when the call began, for the metrics.
"""

from __future__ import annotations

import contextlib
import socket
import time

from thriftpy2.transport import TTransportException

from .admission import SlotActivity, now_ms
from .bounds import CallTooLarge, FrameHeaders, WireBounds

_FRAME_HEADER = 4


class ClientSocket:
    """One accepted connection, as the transport that thriftpy2's transports wrap."""

    def __init__(
        self,
        sock: socket.socket,
        peer: str,
        bounds: WireBounds,
        framed: bool,
        activity: SlotActivity,
    ) -> None:
        self.sock: socket.socket | None = sock
        self.peer = peer
        self._max_frame = bounds.max_frame
        self._max_call = bounds.max_frame + (_FRAME_HEADER if framed else 0)
        self._frames = FrameHeaders(bounds.max_frame) if framed else None
        self._activity = activity
        self.last_progress_ms = now_ms()
        self.call_bytes = 0  # received since the last reply: the call being read
        self.call_started = time.perf_counter()  # when the call's first bytes arrived
        self._received = 0
        self._sent = 0

    def read(self, size: int) -> bytes:
        assert self.sock is not None
        self._activity.blocked(self.last_progress_ms)
        # One byte past the bound is enough to know it was passed.
        data = self.sock.recv(min(size, self._max_call + 1 - self.call_bytes))
        if not data:
            raise TTransportException(TTransportException.END_OF_FILE, "TSocket read 0 bytes")
        self.last_progress_ms = now_ms()
        self._activity.working()
        if not self.call_bytes:
            self.call_started = time.perf_counter()
        self.call_bytes += len(data)
        self._received += len(data)
        if self._frames is not None:
            self._frames.feed(data)
        if self.call_bytes > self._max_call:
            raise CallTooLarge(f"a call of more than {self._max_frame} bytes (--max-frame-size)")
        return data

    def write(self, data: bytes) -> None:
        assert self.sock is not None
        # A reply is ready: that is progress; a client that stops reading it is idle from now.
        self.last_progress_ms = now_ms()
        self._activity.blocked(self.last_progress_ms)
        sent = self.sock.send(data)
        self._sent += sent
        if sent < len(data):  # a large reply: the rest, as the client makes room for it
            view = memoryview(data)[sent:]
            while view:
                self.last_progress_ms = now_ms()
                self._activity.blocked(self.last_progress_ms)
                sent = self.sock.send(view)
                self._sent += sent
                view = view[sent:]
            self.last_progress_ms = now_ms()
        self._activity.working()

    def flush(self) -> None:
        """The end of a reply: the next bytes received begin the next call, and until they come
        the connection waits on its client (idle, whatever the thread does after the reply)."""
        self.call_bytes = 0
        self._activity.blocked(self.last_progress_ms)

    def take_transferred(self) -> tuple[int, int]:
        """Bytes received and sent since the last time this was asked."""
        received, sent = self._received, self._sent
        self._received = self._sent = 0
        return received, sent

    def is_open(self) -> bool:
        return self.sock is not None

    def close(self) -> None:
        if self.sock is None:
            return
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.sock.close()
        self.sock = None
