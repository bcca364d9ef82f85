"""Vectorized string building on pyarrow arrays, so no value is ever formatted in a Python loop.

Every JSON fragment produced here is built from values that need no escaping (hex, digits,
fixed vocabularies checked by :func:`json_literal`); free text is escaped once per vocabulary
word, because JSON escaping distributes over concatenation.
"""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
_UUID_DASHES = (8, 12, 16, 20)


def fixed_width(data: bytes | np.ndarray, width: int) -> pa.StringArray:
    """View a buffer of ``n * width`` ASCII bytes as ``n`` strings without copying per value."""
    buffer = pa.py_buffer(data)
    count = buffer.size // width
    offsets = np.arange(0, count * width + 1, width, dtype=np.int32)
    return pa.StringArray.from_buffers(count, pa.py_buffer(offsets), buffer)


def hex_strings(rng: np.random.Generator, count: int, n_bytes: int) -> pa.StringArray:
    """Random lowercase hex ids of ``2 * n_bytes`` characters (ids, hashes, cookies)."""
    return fixed_width(rng.bytes(count * n_bytes).hex().encode("ascii"), 2 * n_bytes)


def uint64_hex(values: np.ndarray) -> pa.StringArray:
    """Fixed-width 16-character hex rendering of unsigned 64-bit integers."""
    raw = np.ascontiguousarray(values, dtype=">u8").tobytes()
    return fixed_width(raw.hex().encode("ascii"), 16)


def uuid_strings(rng: np.random.Generator, count: int, upper: bool = False) -> pa.StringArray:
    """Random UUID-shaped strings (8-4-4-4-12), as advertising ids and order ids look."""
    nibbles = rng.integers(0, 16, size=(count, 32), dtype=np.uint8)
    nibbles[:, 12] = 4  # version 4 (random), as advertising ids and SDK uuids are
    nibbles[:, 16] = 8 + (nibbles[:, 16] & 3)  # RFC 4122 variant
    chars = _HEX_DIGITS[nibbles]
    if upper:
        chars = np.where(chars >= ord("a"), chars - 32, chars).astype(np.uint8)
    dash = np.full((count, 1), ord("-"), dtype=np.uint8)
    pieces = np.split(chars, _UUID_DASHES, axis=1)
    joined = np.concatenate(
        [pieces[0], dash, pieces[1], dash, pieces[2], dash, pieces[3], dash, pieces[4]], axis=1
    )
    return fixed_width(np.ascontiguousarray(joined).tobytes(), 36)


def int_strings(values: np.ndarray, width: int = 0) -> pa.StringArray:
    """Decimal rendering of integers, left-padded with zeros to ``width``."""
    text = pc.cast(pa.array(np.asarray(values, dtype=np.int64)), pa.string())
    return pc.utf8_lpad(text, width, "0") if width else text


def take(table: pa.Array, indices: np.ndarray) -> pa.Array:
    """Gather ``table[indices]`` (a vocabulary or per-entity column) for many rows at once."""
    return pc.take(table, pa.array(np.asarray(indices, dtype=np.int64)))


def json_literal(value: str) -> str:
    """A JSON string literal for one vocabulary value (quotes included)."""
    return json.dumps(value, ensure_ascii=False)


def json_literals(values: list[str]) -> pa.StringArray:
    """A vocabulary encoded once as JSON string literals, ready to be gathered per row."""
    return pa.array([json_literal(value) for value in values], type=pa.string())


def quoted(values: pa.Array) -> pa.Array:
    """Wrap escape-free strings in quotes; nulls stay null."""
    return pc.binary_join_element_wise('"', values, '"', "")


def json_object(pairs: list[pa.Array]) -> pa.Array:
    """Assemble ``{"k":v,...}`` per row from ``"k":v`` fragments where null means absent.

    A constant non-null first element is joined in on purpose: pyarrow's
    ``binary_join_element_wise(null_handling="skip")`` drops rows whose inputs are all null,
    so the ``{`` prefix keeps every row and its stray leading comma is then removed.
    """
    if not pairs:
        raise ValueError("json_object needs at least one fragment column")
    body = pc.binary_join_element_wise("{", *pairs, ",", null_handling="skip")
    body = pc.replace_substring(body, "{,", "{", max_replacements=1)
    return pc.binary_join_element_wise(body, "}", "")
