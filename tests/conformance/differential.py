"""Run one happybase call against the embedded gateway and Apache HBase; compare the outcomes.

An outcome is the call's value or the error it raised (its type and the Java exception named
at the start of its message). Server-assigned timestamps differ between two servers, so every
integer at or after the comparison's start is replaced by ``SERVER_TIME``; the tests' explicit
timestamps are small numbers, compared exactly.
"""

from __future__ import annotations

import contextlib
import itertools
import re
import time
from collections.abc import Callable
from typing import Any

import happybase
from thriftpy2.thrift import TApplicationException
from thriftpy2.transport import TTransportException

SERVER_TIME = "<server time>"
_JAVA_EXCEPTION = re.compile(r"([A-Za-z]+(?:Exception|Error))")
_tables = itertools.count(1)


def error_outcome(error: Exception) -> tuple[str, str, str]:
    """("error", Thrift exception type, the Java exception its message names)."""
    message = getattr(error, "message", None) or str(error)
    if isinstance(message, bytes):
        message = message.decode(errors="replace")
    if isinstance(error, TApplicationException):  # "Internal error processing <call>[: detail]"
        return ("error", "TApplicationException", message.split(":", 1)[0])
    named = _JAVA_EXCEPTION.search(message)
    return ("error", type(error).__name__, named.group(1).rsplit(".", 1)[-1] if named else "")


def normalized(value: Any, since_ms: int) -> Any:
    """``value`` with server-assigned timestamps replaced, generators and dicts made comparable."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value >= since_ms:
        return SERVER_TIME
    if isinstance(value, dict):
        return {k: normalized(v, since_ms) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(normalized(v, since_ms) for v in value)
    return value


Normalize = Callable[[Any, int], Any]


class Differential:
    """Connections to both servers (``second``: another pair, which on the gateway may land on
    another worker process); tables are created on both under one unique name."""

    def __init__(
        self, gateway: dict[str, object], apache: dict[str, object], *, second: bool = False
    ) -> None:
        self.connections = {
            "gateway": happybase.Connection(**gateway, autoconnect=True),
            "apache": happybase.Connection(**apache, autoconnect=True),
        }
        self.second = (
            {
                "gateway": happybase.Connection(**gateway, autoconnect=True),
                "apache": happybase.Connection(**apache, autoconnect=True),
            }
            if second
            else {}
        )
        self.created: list[bytes] = []
        self.since_ms = int(time.time() * 1000) - 60_000

    def outcomes(
        self,
        call: Callable[[happybase.Connection], Any],
        *,
        on_second: bool = False,
        normalize: Normalize = normalized,
    ) -> dict[str, Any]:
        results = {}
        for server, connection in (self.second if on_second else self.connections).items():
            try:
                value = call(connection)
                if hasattr(value, "__next__"):
                    value = list(value)
                results[server] = ("ok", normalize(value, self.since_ms))
            except TTransportException:
                raise
            except Exception as error:  # compared, not hidden: both must fail alike
                results[server] = error_outcome(error)
        return results

    def same(
        self,
        call: Callable[[happybase.Connection], Any],
        what: str = "",
        *,
        on_second: bool = False,
        normalize: Normalize = normalized,
    ) -> Any:
        """The outcome, asserted identical on both servers (a readable diff when not)."""
        results = self.outcomes(call, on_second=on_second, normalize=normalize)
        assert results["gateway"] == results["apache"], (
            f"{what or call}: gateway {results['gateway']!r} != Apache HBase {results['apache']!r}"
        )
        return results["apache"]

    def create_table(self, families: dict[str, dict[str, Any]]) -> bytes:
        """A fresh table with ``families`` on both servers; dropped in ``close()``."""
        name = f"conformance_{int(time.time())}_{next(_tables)}".encode()
        for connection in self.connections.values():
            connection.create_table(name, families)
        self.created.append(name)
        return name

    def close(self) -> None:
        for connection in self.connections.values():
            for name in self.created:
                with contextlib.suppress(Exception):  # already dropped by the test
                    connection.delete_table(name, disable=True)
            connection.close()
        for connection in self.second.values():
            connection.close()
