"""Length bounds on what a client sends, over every transport x protocol.

A call (a frame) over ``--max-frame-size`` ends its connection with a log line naming the
bound and the peer, and the gateway never buffers more of it than the bound; a string over
``--max-string-size`` in a smaller call fails that call alone with ``IllegalArgument``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import happybase
import Hbase_thrift
import pytest
from gateway_metrics import scrape
from gateway_sockets import closed_by_server
from Hbase_thrift import IllegalArgument
from thrift_bytes import announced_put, encoded_call, framed, read_reply, stream_value
from thriftpy2.transport import TTransportException

from profile_store.cli.main import build_parser
from profile_store.hbase_gateway.bounds import DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_STRING_BYTES
from profile_store.hbase_gateway.process import EmbeddedGateway

FRAME = 65_536
STRING = 4_096
WIRE = [
    ("buffered", "binary"),
    ("buffered", "compact"),
    ("framed", "binary"),
    ("framed", "compact"),
]
MIB = 1 << 20


@pytest.fixture(scope="module", params=WIRE, ids="-".join)
def bounded(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedGateway]:
    """One process (so its memory is the serving worker's), small bounds, table ``t``."""
    transport, protocol = request.param
    args = ("--max-frame-size", str(FRAME), "--max-string-size", str(STRING))
    directory = tmp_path_factory.mktemp(f"bounded-{transport}-{protocol}")
    with EmbeddedGateway(
        directory,
        transport=transport,
        protocol=protocol,
        workers=1,
        server_args=args,
        metrics_port=0,
    ) as gateway:
        setup = happybase.Connection(**gateway.connection_kwargs())
        setup.create_table("t", {"f": {}})
        setup.close()
        yield gateway


def peak_rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def mutate_rows_of_size(size: int, protocol: str, row: bytes) -> bytes:
    """A ``mutateRows`` call of exactly ``size`` bytes: puts of values under the string bound."""

    def call(values: list[bytes]) -> bytes:
        mutations = [
            Hbase_thrift.Mutation(column=b"f:c%d" % i, value=value, isDelete=False)
            for i, value in enumerate(values)
        ]
        batch = Hbase_thrift.BatchMutation(row=row, mutations=mutations)
        args = Hbase_thrift.Hbase.mutateRows_args(tableName=b"t", rowBatches=[batch])
        return encoded_call("mutateRows", args, protocol)

    values = [b"v" * STRING]
    while len(call([*values, b""])) + STRING < size:
        values.append(b"v" * STRING)
    filler = size - len(call([*values, b""]))
    message = call([*values, b"v" * filler])
    if len(message) != size:  # a longer varint length in the compact protocol: one byte less
        message = call([*values, b"v" * (filler - (len(message) - size))])
    assert len(message) == size
    return message


def send_call(gateway: EmbeddedGateway, message: bytes) -> socket.socket:
    sock = socket.create_connection((gateway.host, gateway.port), timeout=30)
    sock.sendall(framed(message) if gateway.transport == "framed" else message)
    return sock


def test_a_string_over_the_bound_fails_its_call_with_illegal_argument(
    bounded: EmbeddedGateway,
) -> None:
    before = scrape(bounded).value("hbase_gateway_oversized_total", bound="string")
    connection = happybase.Connection(**bounded.connection_kwargs())
    table = connection.table("t")
    with pytest.raises(IllegalArgument) as raised:
        table.put(b"too-long", {b"f:c": b"x" * (STRING + 1)})
    assert (
        raised.value.message
        == (
            f"IllegalArgumentException: mutateRows: rowBatches[0].mutations[0].value is "
            f"{STRING + 1} bytes, over the gateway's bound of {STRING} bytes (--max-string-size)"
        ).encode()
    )
    assert table.row(b"too-long") == {}  # nothing written, the connection still usable
    assert scrape(bounded).value("hbase_gateway_oversized_total", bound="string") == before + 1
    connection.close()


def test_a_string_at_the_bound_is_stored(bounded: EmbeddedGateway) -> None:
    connection = happybase.Connection(**bounded.connection_kwargs())
    table = connection.table("t")
    table.put(b"at-bound", {b"f:c": b"x" * STRING})
    assert table.row(b"at-bound") == {b"f:c": b"x" * STRING}
    connection.close()


def test_a_call_of_exactly_the_frame_bound_is_served(bounded: EmbeddedGateway) -> None:
    sock = send_call(bounded, mutate_rows_of_size(FRAME, bounded.protocol, b"at-frame-bound"))
    result = read_reply(sock, "mutateRows", bounded.protocol, bounded.transport)
    assert (result.io, result.ia) == (None, None)
    sock.close()
    reader = happybase.Connection(**bounded.connection_kwargs())
    assert reader.table("t").row(b"at-frame-bound")[b"f:c0"] == b"v" * STRING
    reader.close()


def test_a_call_one_byte_over_the_frame_bound_closes_the_connection_and_names_the_peer(
    bounded: EmbeddedGateway,
) -> None:
    before = scrape(bounded).value("hbase_gateway_oversized_total", bound="frame")
    sock = send_call(bounded, mutate_rows_of_size(FRAME + 1, bounded.protocol, b"over"))
    peer = f"127.0.0.1:{sock.getsockname()[1]}"
    assert closed_by_server(sock)
    log = bounded.log_path.read_text()
    if bounded.transport == "framed":
        assert (
            f"closed the connection from {peer}: a frame of {FRAME + 1} bytes, over the bound "
            f"of {FRAME} bytes (--max-frame-size)"
        ) in log
    else:
        assert (
            f"closed the connection from {peer}: a call of more than {FRAME} bytes "
            "(--max-frame-size)"
        ) in log
    assert scrape(bounded).value("hbase_gateway_oversized_total", bound="frame") == before + 1
    reader = happybase.Connection(**bounded.connection_kwargs())
    assert reader.table("t").row(b"over") == {}  # nothing of it written
    reader.close()


def test_a_128_mib_string_is_never_buffered(bounded: EmbeddedGateway) -> None:
    size = 128 * MIB
    head, _ = announced_put(size, bounded.protocol, bounded.transport)
    peak_before = peak_rss_bytes(bounded.pid)
    sock = socket.create_connection((bounded.host, bounded.port), timeout=30)
    sock.sendall(head)
    sent = stream_value(sock, size)
    assert closed_by_server(sock)
    assert sent < size  # the gateway stopped reading: the rest was never taken
    assert peak_rss_bytes(bounded.pid) - peak_before < 16 * MIB
    assert "(--max-frame-size)" in bounded.log_path.read_text()


def test_a_128_mib_string_at_the_default_bounds_closes_its_connection_and_others_go_on(
    tmp_path: Path,
) -> None:
    with EmbeddedGateway(tmp_path, workers=2) as gateway:
        client = happybase.Connection(**gateway.connection_kwargs())
        client.create_table("t", {"f": {}})
        head, _ = announced_put(128 * MIB, "binary", "buffered")
        sock = socket.create_connection((gateway.host, gateway.port), timeout=60)
        peer = f"127.0.0.1:{sock.getsockname()[1]}"
        sock.sendall(head)
        stream_value(sock, 128 * MIB)
        assert closed_by_server(sock, timeout_s=60)
        client.table("t").put(b"r", {b"f:c": b"1"})
        assert client.table("t").row(b"r") == {b"f:c": b"1"}
        log = gateway.log_path.read_text()
    assert (
        f"closed the connection from {peer}: a call of more than {DEFAULT_MAX_FRAME_BYTES} "
        "bytes (--max-frame-size)"
    ) in log


def test_the_bounds_default_to_16_mib_calls_and_10_mib_strings(tmp_path: Path) -> None:
    args = build_parser().parse_args(["hbase-gateway", "--data-dir", str(tmp_path)])
    assert (args.max_frame_size, args.max_string_size) == (16 * MIB, 10 * MIB)
    assert (DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_STRING_BYTES) == (16_777_216, 10_485_760)
    with pytest.raises(SystemExit):
        build_parser().parse_args(
            ["hbase-gateway", "--data-dir", str(tmp_path), "--max-frame-size", "0"]
        )


def test_a_happybase_batch_over_the_frame_bound_fails_and_writes_nothing(
    bounded: EmbeddedGateway,
) -> None:
    connection = happybase.Connection(**bounded.connection_kwargs())
    failed = (TTransportException, ConnectionError, OSError)
    with pytest.raises(failed), connection.table("t").batch() as batch:
        for i in range(40):
            batch.put(b"big-%02d" % i, {b"f:c": b"x" * 3000})
    reader = happybase.Connection(**bounded.connection_kwargs())
    assert list(reader.table("t").scan(row_prefix=b"big-")) == []
    reader.close()
