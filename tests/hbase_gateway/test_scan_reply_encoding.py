"""Scan and get replies encoded straight to bytes are exactly what thriftpy2 writes for the
objects."""

from __future__ import annotations

import random

import pytest
from thriftpy2.protocol import TCyBinaryProtocolFactory
from thriftpy2.thrift import TMessageType
from thriftpy2.transport import TMemoryBuffer

from profile_store.hbase_gateway.handler import HbaseHandler
from profile_store.hbase_gateway.idl import load_idl
from profile_store.hbase_gateway.schema import LATEST_TIMESTAMP, FamilyDescriptor
from profile_store.hbase_gateway.store import Store
from profile_store.hbase_gateway.visible_cells import finish_cells, group_rows
from profile_store.hbase_gateway.wire import (
    EncodedRows,
    encode_newest_rows,
    encode_row,
    write_reply,
)

IDL = load_idl()
PREFIXES = (b"cf:", b"other:")

ROWS = [
    (b"r1", [(b"r1", 0, b"a", 1_700_000_000_123, b"value"), (b"r1", 1, b"", 5, b"")]),
    (b"\x00\xff row", [(b"\x00\xff row", 0, b"q" * 300, 2**63 - 1, bytes(range(256)) * 40)]),
    (b"r3", [(b"r3", 0, b"x:y", 0, b"v")]),  # a qualifier with a colon
    (b"r4", []),  # a partial row of nothing does not occur, but encodes alike
]


def written(write) -> bytes:
    buffer = TMemoryBuffer()
    write(TCyBinaryProtocolFactory().get_protocol(buffer))
    return buffer.getvalue()


def thriftpy2_reply(api: str, rows: list) -> bytes:
    objects = [
        IDL.TRowResult(
            row=row,
            columns={PREFIXES[c[1]] + c[2]: IDL.TCell(value=c[4], timestamp=c[3]) for c in cells},
        )
        for row, cells in rows
    ]
    result = getattr(IDL.Hbase, f"{api}_result")(success=objects)

    def write(oprot) -> None:
        oprot.write_message_begin(api, TMessageType.REPLY, 7)
        result.write(oprot)
        oprot.write_message_end()

    return written(write)


@pytest.mark.parametrize("api", ["scannerGetList", "scannerGet"])
@pytest.mark.parametrize("count", [0, 1, len(ROWS)])
def test_an_encoded_scan_reply_is_byte_for_byte_thriftpy2s(api: str, count: int) -> None:
    rows = ROWS[:count]
    encoded = EncodedRows(encode_row(PREFIXES, row, cells) for row, cells in rows)
    assert written(lambda oprot: write_reply(oprot, api, 7, encoded)) == thriftpy2_reply(api, rows)


def test_cells_of_many_different_lengths_encode_alike() -> None:
    rows = [(b"r%d" % n, [(b"r%d" % n, 0, b"q" * n, n, b"v" * (n * 7 % 50))]) for n in range(200)]
    encoded = EncodedRows(encode_row(PREFIXES, row, cells) for row, cells in rows)
    reply = written(lambda oprot: write_reply(oprot, "scannerGetList", 7, encoded))
    assert reply == thriftpy2_reply("scannerGetList", rows)


def test_the_one_pass_encoding_keeps_what_finish_cells_keeps() -> None:
    """Newest live version per column, TTL floors applied, as ``finish_cells`` then encode."""
    rng = random.Random(5)
    for _ in range(300):
        cells = sorted(
            {
                (rng.randrange(2), b"q%d" % rng.randrange(4), rng.randrange(1, 50))
                for _ in range(rng.randrange(0, 12))
            },
            key=lambda c: (c[0], c[1], -c[2]),
        )
        row_cells = [(b"r", fam, qual, ts, b"v%d" % ts) for fam, qual, ts in cells]
        floors = rng.choice([None, (None, 20), (30, None), (10, 40)])
        kept = finish_cells(row_cells, floors, (1, 1))
        expected = [encode_row(PREFIXES, b"r", kept)] if kept else []
        out: list[bytes] = []
        encode_newest_rows(PREFIXES, row_cells, floors, out)
        assert out == expected


def test_the_flat_chunk_encoding_matches_encoding_each_grouped_row() -> None:
    """Rows of a forward chunk, with versions, expired cells and rows left empty, encode as
    each grouped row alone (empty rows dropped)."""
    rng = random.Random(11)
    for _ in range(200):
        cells = sorted(
            {
                (
                    rng.choice([b"a", b"b", b"b\x00", b"c" * 40]),
                    rng.randrange(2),
                    b"q%d" % rng.randrange(3),
                    rng.randrange(1, 50),
                )
                for _ in range(rng.randrange(0, 20))
            },
            key=lambda c: (c[0], c[1], c[2], -c[3]),
        )
        flat = [(row, fam, qual, ts, b"v" * (ts % 7)) for row, fam, qual, ts in cells]
        floors = rng.choice([None, (None, 20), (30, None), (10, 40), (60, 60)])
        expected = [
            encode_row(PREFIXES, row, kept)
            for row, rc in group_rows(flat)
            if (kept := finish_cells(rc, floors, (1, 1)))
        ]
        out: list[bytes] = []
        encode_newest_rows(PREFIXES, flat, floors, out)
        assert out == expected


@pytest.mark.parametrize("api", ["getRowsWithColumnsTs", "getRowWithColumnsTs"])
def test_a_gets_reply_over_the_binary_protocol_is_encoded_byte_for_byte_as_thriftpy2s(
    tmp_path, api: str
) -> None:
    store = Store(tmp_path)
    try:
        store.create_table(b"t", [FamilyDescriptor(b"cf"), FamilyDescriptor(b"other")])
        for ts in (1, 2):  # an older version, which a get leaves out
            store.mutate_rows(
                b"t",
                [
                    (b"r1", [(False, b"cf:a", b"v%d" % ts), (False, b"other:", b"")]),
                    (b"r2", [(False, b"cf:b" * 30, bytes(range(256)) * ts)]),
                ],
                ts,
            )
        rows = [b"r1", b"r2", b"missing"] if api.startswith("getRows") else b"r2"
        encoded = getattr(HbaseHandler(store, encode_rows=True), api)(
            b"t", rows, None, LATEST_TIMESTAMP, {}
        )
        objects = getattr(HbaseHandler(store), api)(b"t", rows, None, LATEST_TIMESTAMP, {})
    finally:
        store.close()
    assert type(encoded) is EncodedRows
    result = getattr(IDL.Hbase, f"{api}_result")(success=objects)

    def write(oprot) -> None:
        oprot.write_message_begin(api, TMessageType.REPLY, 7)
        result.write(oprot)
        oprot.write_message_end()

    assert written(lambda oprot: write_reply(oprot, api, 7, encoded)) == written(write)
