"""Length bounds on what a client sends: a call (a frame), and each string in it.

thriftpy2 trusts the lengths on the wire: a frame header or a string prefix announcing 128 MB
makes its Cython transport allocate that much and read until it has it, so one socket could
make a worker buffer any amount. The gateway counts the bytes of each call as they arrive,
below thriftpy2 (``ClientSocket``), and closes a connection whose call passes ``max_frame``
before thriftpy2 sees the byte that passed it; with the framed transport a frame header over
the bound is refused before any of its payload is read. Apache HBase 2.6's Thrift server does
the same with frames over ``hbase.regionserver.thrift.framed.max_frame_size_in_mb`` (2 MiB by
default) and, buffered, with calls over libthrift's ``maxMessageSize`` (100 MiB). The default
here, 16 MiB (libthrift's own frame bound is 16,384,000 bytes), is several times the largest
call the pipeline sends (in a whole-graph day of a million events); decoding multiplies
what a call holds (a list of empty structs: about 100 bytes of Python objects per byte), so a
bound far above real calls would only widen what one call can cost.

A string over ``max_string`` inside a call within the frame bound (a cell value, a row key, a
filter string) fails the call alone with ``IllegalArgument`` naming the field and the bound,
and nothing of it is written, as HBase refuses a cell over ``hbase.client.keyvalue.maxsize``
(10 MiB). The call is decoded first, so the connection stays in step and usable; only a call
larger than the string bound can hold such a string, so smaller calls are not inspected.
"""

from __future__ import annotations

from dataclasses import dataclass

from thriftpy2.transport import TTransportException

DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
DEFAULT_MAX_STRING_BYTES = 10 * 1024 * 1024  # HBase's hbase.client.keyvalue.maxsize


@dataclass(frozen=True)
class WireBounds:
    """``max_frame``: bytes of one call (with the framed transport, of one frame);
    ``max_string``: bytes of one string or binary value in a call."""

    max_frame: int = DEFAULT_MAX_FRAME_BYTES
    max_string: int = DEFAULT_MAX_STRING_BYTES

    def __post_init__(self) -> None:
        for name in ("max_frame", "max_string"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1 byte, got {getattr(self, name)}")


class CallTooLarge(TTransportException):
    """A call or frame over ``max_frame``: the connection is closed (its rest is never read)."""

    def __init__(self, message: str) -> None:
        super().__init__(TTransportException.UNKNOWN, message)

    def __str__(self) -> str:
        return self.message or ""


class FrameHeaders:
    """Follows the frames of a framed connection through the bytes read from it, so a header
    announcing more than ``max_frame`` is refused before thriftpy2 reads (or allocates) it."""

    __slots__ = ("_head", "_left", "_max_frame")

    def __init__(self, max_frame: int) -> None:
        self._max_frame = max_frame
        self._head = b""
        self._left = 0  # payload bytes of the current frame not yet read

    def feed(self, data: bytes) -> None:
        position, end = 0, len(data)
        while position < end:
            if self._left:
                step = min(self._left, end - position)
                self._left -= step
                position += step
                continue
            needed = 4 - len(self._head)
            self._head += data[position : position + needed]
            position += needed
            if len(self._head) == 4:
                size = int.from_bytes(self._head, "big", signed=True)
                self._head = b""
                if size > self._max_frame:
                    raise CallTooLarge(
                        f"a frame of {size} bytes, over the bound of {self._max_frame} bytes "
                        "(--max-frame-size)"
                    )
                self._left = max(size, 0)


def oversized_string(value: object, max_string: int, path: str = "") -> tuple[str, int] | None:
    """The path (``rowBatches[0].mutations[1].value``) and length of the first string or
    binary value in a decoded Thrift struct longer than ``max_string``; None if there is none."""
    if isinstance(value, bytes | str):
        return (path, len(value)) if len(value) > max_string else None
    if isinstance(value, list | tuple | set | frozenset):
        for i, item in enumerate(value):
            found = oversized_string(item, max_string, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            found = oversized_string(key, max_string, f"a key of {path}") or oversized_string(
                item, max_string, f"{path}[{_short(key)}]"
            )
            if found:
                return found
        return None
    spec = getattr(value, "thrift_spec", None)
    if spec is None:
        return None
    for field in spec.values():
        name = field[1]
        found = oversized_string(
            getattr(value, name, None), max_string, f"{path}.{name}" if path else name
        )
        if found:
            return found
    return None


def _short(key: object) -> str:
    text = repr(key)
    return text if len(text) <= 40 else text[:37] + "..."
