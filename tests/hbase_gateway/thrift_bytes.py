"""Thrift calls as raw bytes, for tests that send what happybase never would: half a call, a
string of 128 MB announced in its length prefix, a frame larger than the gateway's bound."""

from __future__ import annotations

import socket
import struct

import Hbase_thrift
from thriftpy2.protocol import TBinaryProtocol, TCompactProtocol
from thriftpy2.thrift import TApplicationException, TMessageType
from thriftpy2.transport import TBufferedTransport, TFramedTransport, TMemoryBuffer, TSocket

MARKER = b"<<the value whose length the test rewrites>>"


def encoded_call(api: str, args: object, protocol: str = "binary") -> bytes:
    """The bytes of one call message (no frame header), as a happybase client writes them."""
    buffer = TMemoryBuffer()
    proto = (TBinaryProtocol if protocol == "binary" else TCompactProtocol)(buffer)
    proto.write_message_begin(api, TMessageType.CALL, 1)
    args.write(proto)
    proto.write_message_end()
    return buffer.getvalue()


def framed(message: bytes) -> bytes:
    return struct.pack(">i", len(message)) + message


def put_call(table: bytes, row: bytes, column: bytes, value: bytes, protocol: str) -> bytes:
    """``mutateRows`` of one put, as happybase's ``Table.put`` sends it."""
    mutation = Hbase_thrift.Mutation(column=column, value=value, isDelete=False, writeToWAL=True)
    batch = Hbase_thrift.BatchMutation(row=row, mutations=[mutation])
    args = Hbase_thrift.Hbase.mutateRows_args(tableName=table, rowBatches=[batch], attributes={})
    return encoded_call("mutateRows", args, protocol)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def announced_put(size: int, protocol: str, transport: str) -> tuple[bytes, bytes]:
    """A put of a value announced as ``size`` bytes: ``(head, tail)``, the bytes before the
    value (its length prefix included) and after it, so a test can stream the value itself."""
    message = put_call(b"t", b"r", b"f:c", MARKER, protocol)
    at = message.index(MARKER)
    if protocol == "binary":
        head = message[: at - 4] + struct.pack(">i", size)
    else:
        prefix = _varint(len(MARKER))
        head = message[: at - len(prefix)] + _varint(size)
    tail = message[at + len(MARKER) :]
    if transport == "framed":
        head = struct.pack(">i", len(head) + size + len(tail)) + head
    return head, tail


def stream_value(sock: socket.socket, size: int, chunk: int = 1 << 20) -> int:
    """Send ``size`` zero bytes until done or the server closes; returns the bytes sent."""
    zeros = bytes(chunk)
    sent = 0
    try:
        while sent < size:
            sent += sock.send(zeros[: min(chunk, size - sent)])
    except OSError:  # closed by the server: a reset or a broken pipe
        pass
    return sent


def half_call(protocol: str, transport: str) -> bytes:
    """Half of a real call's bytes (for framed: the frame header and half its payload)."""
    message = put_call(b"t", b"r", b"f:c", b"v" * 64, protocol)
    whole = framed(message) if transport == "framed" else message
    return whole[: len(whole) // 2]


def read_reply(sock: socket.socket, api: str, protocol: str, transport: str) -> object:
    """The ``<api>_result`` the gateway answered on ``sock`` (thriftpy2 decodes it); raises
    the ``TApplicationException`` it answered instead."""
    trans = TSocket(sock=sock)
    trans = TFramedTransport(trans) if transport == "framed" else TBufferedTransport(trans)
    proto = (TBinaryProtocol if protocol == "binary" else TCompactProtocol)(trans)
    name, kind, _ = proto.read_message_begin()
    assert name == api
    if kind == TMessageType.EXCEPTION:
        error = TApplicationException()
        error.read(proto)
        raise error
    assert kind == TMessageType.REPLY
    result = getattr(Hbase_thrift.Hbase, f"{api}_result")()
    result.read(proto)
    proto.read_message_end()
    return result
