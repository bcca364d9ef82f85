"""Reading Spark's integer tuple sketches in the ``datasketches`` Python package.

Spark (DataSketches Java) stores each integer summary as a 4-byte little-endian value followed
by a 1-byte mode; the Python package needs a serde that knows this layout.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np
from datasketches import PyObjectSerDe, compact_tuple_sketch

_SUMMARY = struct.Struct("<iB")
MODE_SUM = 0


class SparkIntegerSummarySerDe(PyObjectSerDe):
    """Integer summary as Spark writes it: int32 value, uint8 mode (0 = sum)."""

    def get_size(self, item: int) -> int:
        return _SUMMARY.size

    def to_bytes(self, item: int) -> bytes:
        return _SUMMARY.pack(int(item), MODE_SUM)

    def from_bytes(self, data: bytes, offset: int) -> tuple[int, int]:
        value, _mode = _SUMMARY.unpack_from(data, offset)
        return value, _SUMMARY.size


SERDE = SparkIntegerSummarySerDe()


def load_counts_sketch(data: bytes) -> compact_tuple_sketch:
    """A Spark ``tuple_sketch_agg_integer`` result as a compact tuple sketch of int summaries."""
    return compact_tuple_sketch.deserialize(bytes(data), SERDE)


MAX_THETA = (1 << 63) - 1
_TUPLE_FAMILY = 9
_COMPACT_TYPE = 1
_EMPTY_FLAG = 0x04
_BIG_ENDIAN_FLAG = 0x01
_ENTRIES = np.dtype([("hash", "<u8"), ("value", "<i4"), ("mode", "u1")])


class CountEntries(NamedTuple):
    """A counts sketch's retained entries as arrays: user hashes and their event counts."""

    hashes: np.ndarray  # uint64
    counts: np.ndarray  # int64
    theta64: int
    seed_hash: int


def count_entries(data: bytes) -> CountEntries:
    """The entries of a Spark counts sketch, read from its bytes with numpy.

    The serialized compact tuple sketch (serial version 3): preamble longs, serial version,
    family 9, sketch type 1, flags, seed hash; then, unless empty or a single entry (one
    preamble long), the retained count and, when estimating, theta; then per entry the 8-byte
    hash and its 5-byte integer summary (value, mode). Reading that directly avoids a Python
    call per entry; any other layout goes through ``load_counts_sketch``.
    """
    data = bytes(data)
    preamble, version, family, kind, _, flags, seed_hash = struct.unpack_from("<BBBBBBH", data)
    if (version, family, kind) != (3, _TUPLE_FAMILY, _COMPACT_TYPE) or flags & _BIG_ENDIAN_FLAG:
        return _entries_of(load_counts_sketch(data))
    if flags & _EMPTY_FLAG:
        return CountEntries(np.empty(0, np.uint64), np.empty(0, np.int64), MAX_THETA, seed_hash)
    if preamble == 1:  # one entry, right after the first preamble long
        count = (len(data) - 8) // _ENTRIES.itemsize
    else:
        (count,) = struct.unpack_from("<i", data, 8)
    theta = struct.unpack_from("<q", data, 16)[0] if preamble >= 3 else MAX_THETA
    start = 8 * preamble
    if len(data) != start + count * _ENTRIES.itemsize:
        return _entries_of(load_counts_sketch(data))
    entries = np.frombuffer(data, dtype=_ENTRIES, count=count, offset=start)
    return CountEntries(
        entries["hash"].astype(np.uint64), entries["value"].astype(np.int64), theta, seed_hash
    )


def _entries_of(sketch: compact_tuple_sketch) -> CountEntries:
    entries = list(sketch)
    hashes = np.fromiter((key for key, _ in entries), dtype=np.uint64, count=len(entries))
    counts = np.fromiter((value for _, value in entries), dtype=np.int64, count=len(entries))
    return CountEntries(hashes, counts, sketch.theta64, sketch.get_seed_hash())
