"""Reading Spark's integer tuple sketches in the ``datasketches`` Python package.

Spark (DataSketches Java) stores each integer summary as a 4-byte little-endian value followed
by a 1-byte mode; the Python package needs a serde that knows this layout.
"""

from __future__ import annotations

import struct

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
