"""Lines parsed into the columns the rule table tests, in Python: the collector's parse.

The one per-line Python step of the collector, because JSON parsing is: each line is decoded
as ingest's Spark parse (``json_lines``) decodes it, into what the line is (UTF-8 JSON, an
object, how many keys the contract does not name, the first field of the wrong JSON type) and
each contract field. What Spark's parser refuses is refused here too: a repeated key, ``NaN``
and its kin, an unpaired surrogate (``\\ud800``), a raw control character inside a string, a
byte-order mark. One difference, on purpose: Spark ignores text after a complete JSON value
(``{...} junk`` is an event to ingest), the collector refuses it as ``malformed_record``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from profile_store.events.rules import WRONG_TYPE_FIELD
from profile_store.events.schema import MAP_FIELDS, STRING_FIELDS

_FIELDS = (*STRING_FIELDS, *MAP_FIELDS)
_KNOWN = frozenset(_FIELDS)
_STRING_MAP = pa.map_(pa.string(), pa.string())


class _Refused(ValueError):
    """A construct Spark's JSON parser refuses."""


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        raise _Refused("a repeated key")
    return found


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON")


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant)


def _has_surrogate(value: Any) -> bool:
    """An unpaired surrogate anywhere in a decoded value (Spark refuses such a document)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_has_surrogate(k) or _has_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_surrogate(v) for v in value)
    return False


_NOT_JSON = object()


def decode(line: bytes) -> Any:
    """The JSON value of ``line``, or ``_NOT_JSON``."""
    try:
        value = _DECODER.decode(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _NOT_JSON
    if b"\\u" in line and _has_surrogate(value):
        return _NOT_JSON
    return value


@dataclass(frozen=True)
class ParsedLines:
    """The rule columns of some lines, and each line's JSON object (None: not an object)."""

    columns: pa.Table
    objects: list[dict[str, Any] | None]


def parse_lines(lines: Sequence[bytes]) -> ParsedLines:
    """Decode ``lines`` into ``is_json``, ``is_object``, ``unknown_field_count``,
    ``wrong_type_field`` and every contract field (a string, or a string map), each field null
    where the line does not hold it with the contract's type."""
    is_json: list[bool] = []
    objects: list[dict[str, Any] | None] = []
    unknown: list[int | None] = []
    wrong: list[str | None] = []
    values: dict[str, list[Any]] = {name: [] for name in _FIELDS}
    # One pass over the contract's fields per line, in their order (the first of the wrong type
    # is the one named): this loop is the collector's cost per event.
    fields = [(name, values[name], name in MAP_FIELDS) for name in _FIELDS]
    for line in lines:
        value = decode(line)
        is_json.append(value is not _NOT_JSON)
        event = value if isinstance(value, dict) else None
        objects.append(event)
        if event is None:
            unknown.append(None)
            wrong.append(None)
            for column in values.values():
                column.append(None)
            continue
        unknown.append(len(event.keys() - _KNOWN))
        first_wrong = None
        for name, column, is_map in fields:
            field = event.get(name)
            if field is not None:
                if is_map:
                    right = isinstance(field, dict) and all(
                        isinstance(v, str) for v in field.values()
                    )
                else:
                    right = isinstance(field, str)
                if not right:
                    if first_wrong is None:
                        first_wrong = name
                    field = None
            column.append(field)
        wrong.append(first_wrong)
    return ParsedLines(
        pa.table(
            {
                "is_json": pa.array(is_json, pa.bool_()),
                "is_object": pa.array([event is not None for event in objects], pa.bool_()),
                "unknown_field_count": pa.array(unknown, pa.int32()),
                WRONG_TYPE_FIELD: pa.array(wrong, pa.string()),
                **{name: pa.array(values[name], pa.string()) for name in STRING_FIELDS},
                **{
                    name: pa.array(
                        [None if m is None else list(m.items()) for m in values[name]], _STRING_MAP
                    )
                    for name in MAP_FIELDS
                },
            }
        ),
        objects,
    )
