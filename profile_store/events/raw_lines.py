"""A rejected line as the quarantine keeps it: a bounded prefix, its length, and what it names.

A hostile sender can make every line megabytes long (500 attributes of 10,000 characters);
keeping such lines whole would make the quarantine the largest data set of the lake. So ``raw``
keeps the line's first ``max_raw_bytes`` bytes (cut on a character boundary) and ``raw_length``
its whole length in bytes. The erasure step removes quarantine rows whose line names a forgotten
id as a JSON string; for a cut line, the part past the prefix is searched here, at ingest, and
its short JSON strings (ids are short) are kept in ``raw_strings``, so the search still sees
the whole line (``names_any``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from pyspark.sql import Column
from pyspark.sql import functions as F

# A JSON string, escapes included; possessive loops, so a megabyte line is one linear pass.
_JSON_STRING = r'"([^"\\]*+(?:\\.[^"\\]*+)*+)"'
MAX_STRING_CHARACTERS = 128  # an id: a UUID is 36, a SHA-256 hex digest 64
MAX_STRINGS = 1000  # a line of more distinct short strings keeps its first ones


def _is_continuation(binary: Column, position: int) -> Column:
    """The byte at ``position`` (1-based) continues a multi-byte UTF-8 character."""
    return F.hex(F.substring(binary, position, 1)).rlike("^[89AB]")


def _prefix_length(binary: Column, limit: int) -> Column:
    """The most bytes of at most ``limit`` that end on a character boundary (a character is at
    most four bytes, so at most three are given back)."""
    return (
        F.when(~_is_continuation(binary, limit + 1), limit)
        .when(~_is_continuation(binary, limit), limit - 1)
        .when(~_is_continuation(binary, limit - 1), limit - 2)
        .otherwise(limit - 3)
    )


def kept_line(line: Column, max_raw_bytes: int) -> dict[str, Column]:
    """The quarantine's columns for a received ``line``: ``raw`` (valid UTF-8, its first
    ``max_raw_bytes`` bytes at most), ``raw_bytes`` (those bytes exactly, only when the line is
    not valid UTF-8), ``raw_length`` (the whole line's bytes) and ``raw_strings`` (only for a cut
    line: its distinct JSON strings of at most ``MAX_STRING_CHARACTERS`` characters, as written,
    the first ``MAX_STRINGS`` of them)."""
    binary = line.cast("binary")
    cut = F.octet_length(line) > max_raw_bytes
    prefix = F.substring(binary, 1, _prefix_length(binary, max_raw_bytes))
    kept = F.when(cut, prefix).otherwise(binary)
    short = F.filter(json_strings(line), lambda value: F.length(value) <= MAX_STRING_CHARACTERS)
    return {
        "raw": F.make_valid_utf8(kept.cast("string")),
        "raw_bytes": F.when(~F.is_valid_utf8(line), kept),
        "raw_length": F.octet_length(line).cast("long"),
        "raw_strings": F.when(cut, F.slice(F.array_distinct(short), 1, MAX_STRINGS)),
    }


def json_strings(text: Column) -> Column:
    """The JSON strings ``text`` holds, as written (escapes kept, without their quotes)."""
    return F.regexp_extract_all(F.make_valid_utf8(text), F.lit(_JSON_STRING), F.lit(1))


def written_forms(ids: Iterable[str]) -> list[str]:
    """Each id as a JSON line writes it between its quotes (``json.dumps`` escaping)."""
    return sorted({json.dumps(value)[1:-1] for value in ids})


def names_any(ids: Iterable[str]) -> Column:
    """A quarantine row whose received line names one of ``ids`` as a JSON string: in the kept
    prefix ``raw``, or, for a cut line, among its ``raw_strings``. One set lookup per string
    of the line, however many ids (an erasure batch names thousands)."""
    written = written_forms(ids)
    found = F.exists(quarantine_strings(), lambda value: value.isin(written))
    return F.coalesce(found, F.lit(False))  # never null: a kept row is one where it is False


def quarantine_strings() -> Column:
    """The JSON strings a quarantine row's received line holds: those of its kept prefix and,
    for a cut line, its ``raw_strings``."""
    empty = F.array().cast("array<string>")
    prefix = F.coalesce(json_strings(F.col("raw")), empty)
    return F.concat(prefix, F.coalesce(F.col("raw_strings"), empty))
