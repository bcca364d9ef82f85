"""uvicorn's HTTP/1.1 connection, with a deadline on every request's headers.

uvicorn closes a connection idle between requests (``timeout_keep_alive``), but not one that
sends a request's headers slowly: a client sending a byte now and then (slowloris) holds its
connection, and its place in the server, for as long as it likes, and a connection that sends
nothing at all after connecting is never closed. Here each request's headers must be complete
within ``PROFILES_HTTP_HEADER_TIMEOUT_SECONDS`` (default 10) of the connection opening or of the
request's first byte; otherwise a request that had begun gets a 408 and the connection is
closed. The body has its own deadline (``conventions.body_timeout_s``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from profile_store.service import metrics
from profile_store.service.edge import SECURITY_HEADERS
from profile_store.settings.definitions import HTTP_HEADER_TIMEOUT_SECONDS

logger = logging.getLogger(__name__)

HEADER_TIMEOUT_VARIABLE = HTTP_HEADER_TIMEOUT_SECONDS.name
DEFAULT_HEADER_TIMEOUT_S = HTTP_HEADER_TIMEOUT_SECONDS.number_default


def header_timeout_s(env: Mapping[str, str] | None = None) -> float:
    """Seconds a request's headers may take to arrive (``PROFILES_HTTP_HEADER_TIMEOUT_SECONDS``)."""
    return HTTP_HEADER_TIMEOUT_SECONDS.read(env)


def _timeout_response(seconds: float) -> bytes:
    body = json.dumps(
        {
            "error": "request_timeout",
            "message": f"the request headers did not arrive within {seconds:g} s",
            "path": None,
        }
    ).encode()
    headers = {
        "content-type": "application/json",
        "content-length": str(len(body)),
        "connection": "close",
        **SECURITY_HEADERS,
    }
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    return f"HTTP/1.1 408 Request Timeout\r\n{head}\r\n".encode() + body


class HeaderDeadlineProtocol(AutoHTTPProtocol):  # type: ignore[misc,valid-type]
    """uvicorn's protocol (httptools when installed, else h11) with the header deadline.

    A request's headers are complete when the protocol starts a new request cycle (both
    implementations keep it in ``self.cycle``), which is all this relies on.
    """

    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:
        self._deadline: asyncio.TimerHandle | None = None
        self._request_begun = False
        super().connection_made(transport)
        metrics.CONNECTIONS.inc()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        metrics.CONNECTIONS.dec()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a request's headers are in
            self._disarm()
            self._request_begun = False
        elif self.cycle is None or self.cycle.response_complete:  # part of a request's headers
            self._request_begun = True
            if self._deadline is None:
                self._arm()

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(self.header_timeout_s, self._headers_too_late)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _headers_too_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        metrics.record_header_timeout()
        if self._request_begun:
            logger.info(
                "%s: request headers not received within %g s, connection closed",
                f"{self.client[0]}:{self.client[1]}" if self.client else "a client",
                self.header_timeout_s,
            )
            self.transport.write(_timeout_response(self.header_timeout_s))
        self.transport.close()


def deadline_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """``HeaderDeadlineProtocol`` with ``header_timeout`` seconds, for ``uvicorn.Config(http=)``."""
    return type(
        "HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout_s": header_timeout}
    )
