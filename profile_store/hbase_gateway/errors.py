"""Gateway errors, independent of Thrift.

The storage engine raises these; the Thrift handler maps each one onto the exception HBase's own
Thrift server would send (``IOError``, ``IllegalArgument``, ``AlreadyExists``). Messages start with
the Java exception name HBase uses, so client code that matches on it keeps working.
"""

from __future__ import annotations


class GatewayError(Exception):
    """Base class: an error reported to the client rather than a server fault."""

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class GatewayIOError(GatewayError):
    """Sent as Thrift ``IOError`` (HBase: an ``IOException`` on the region server or master)."""


class GatewayIllegalArgument(GatewayError):
    """Sent as Thrift ``IllegalArgument`` where the IDL declares it, else as ``IOError``."""


class GatewayInternalError(GatewayError):
    """Sent as Thrift's ``TApplicationException`` (INTERNAL_ERROR), "Internal error processing
    <call>": what HBase's Thrift server sends for a runtime exception its handler does not catch
    (a filter string ``ParseFilter`` rejects, a ``Put`` or ``Get`` its constructor rejects)."""


class GatewayAlreadyExists(GatewayError):
    """Sent as Thrift ``AlreadyExists`` (createTable on a name in use)."""


def table_not_found(name: bytes) -> GatewayIOError:
    return GatewayIOError(f"TableNotFoundException: {show_bytes(name)}")


def table_disabled(name: bytes) -> GatewayIOError:
    return GatewayIOError(f"TableNotEnabledException: {show_bytes(name)} is disabled")


def table_enabled(name: bytes) -> GatewayIOError:
    return GatewayIOError(f"TableNotDisabledException: {show_bytes(name)} is enabled")


def no_such_family(table: bytes, family: bytes) -> GatewayIOError:
    return GatewayIOError(
        f"NoSuchColumnFamilyException: column family {show_bytes(family)} does not exist "
        f"in table {show_bytes(table)}"
    )


def show_bytes(name: bytes) -> str:
    """Render bytes like HBase's ``Bytes.toStringBinary``: printable ASCII, else ``\\xNN``."""
    return "".join(chr(b) if 32 <= b < 127 and b != 92 else f"\\x{b:02X}" for b in name)


def retries_exhausted(failed: int, cause: str) -> GatewayIOError:
    """HBase's client error for a batch (``Table.put(List)``/``delete(List)``) with failed rows."""
    actions = "action" if failed == 1 else "actions"
    times = "time" if failed == 1 else "times"
    return GatewayIOError(
        f"RetriesExhaustedWithDetailsException: Failed {failed} {actions}: {cause}: "
        f"{failed} {times}, servers with issues: null"
    )
