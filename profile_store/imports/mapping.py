"""The mapping file of ``profiles import``: which source column (or constant) becomes which field.

A mapping is YAML or JSON. Every event field is a source column (``app_id: app``, or
``{column: app, prefix: "td."}``) or a constant (``{value: click}``); the event time names its
column, its format and its time zone; attributes and alt ids are lists or maps of columns.

    source: {format: csv, header: true, delimiter: ","}
    app_id: {column: app, prefix: "td."}
    event_type: {value: click}
    user_id: ip
    id_type: {value: cookie}
    event_time: {column: click_time, format: "yyyy-MM-dd HH:mm:ss", time_zone: UTC}
    attributes: [os, device, channel]

Every problem is a ``MappingError`` naming the key (``event_time.time_zone: ...``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml

from profile_store.events.schema import ID_TYPES

SOURCE_FORMATS = ("csv", "parquet", "json")
EPOCH_FORMATS = ("epoch_seconds", "epoch_millis")
ISO_8601 = "iso8601"
WHITESPACE = "whitespace"
_OFFSET = re.compile(r"^[+-]\d{2}:\d{2}$")


class MappingError(ValueError):
    """A mapping file that cannot be used; the message starts with the key at fault."""


@dataclass(frozen=True)
class FieldSource:
    """A field's value: a source column (with an optional prefix), or a constant."""

    column: str | None = None
    value: str | None = None
    prefix: str = ""


@dataclass(frozen=True)
class EventTime:
    """The event time's column, its format and the zone of times written without one.

    ``format`` is ``iso8601`` (with or without a zone), ``epoch_seconds``, ``epoch_millis`` or a
    Spark datetime pattern (``yyyy-MM-dd HH:mm:ss``). Typed timestamp columns (Parquet) need no
    format: an instant is used as it is, a timestamp without zone is read in ``time_zone``.
    """

    column: str
    format: str = ISO_8601
    time_zone: str = "UTC"


@dataclass(frozen=True)
class SourceOptions:
    """How to read the source: its format (from the file names when unset) and CSV options.

    ``delimiter: whitespace`` reads column-aligned text (runs of spaces or tabs between values,
    as in many legacy exports); its first line names the columns."""

    format: str | None = None
    header: bool = True
    delimiter: str = ","


@dataclass(frozen=True)
class ImportMapping:
    app_id: FieldSource
    event_type: FieldSource
    user_id: FieldSource
    id_type: FieldSource
    event_time: EventTime
    event_id: FieldSource | None = None
    member_id: FieldSource | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    alt_ids: dict[str, str] = field(default_factory=dict)
    ip: str | None = None
    user_agent: str | None = None
    source: SourceOptions = SourceOptions()

    def columns(self) -> list[str]:
        """Every source column the mapping reads, in mapping order, each once."""
        named = [
            *(
                f.column
                for f in (
                    self.app_id,
                    self.event_type,
                    self.user_id,
                    self.id_type,
                    self.event_id,
                    self.member_id,
                )
                if f is not None and f.column is not None
            ),
            self.event_time.column,
            *self.attributes.values(),
            *self.alt_ids.values(),
            *(c for c in (self.ip, self.user_agent) if c is not None),
        ]
        return list(dict.fromkeys(named))

    def check_columns(self, available: list[str]) -> None:
        """Every column the mapping names must be in the source."""
        missing = [c for c in self.columns() if c not in available]
        if missing:
            raise MappingError(
                f"columns {', '.join(repr(c) for c in missing)}: not in the source "
                f"(its columns: {', '.join(available)})"
            )


_FIELDS = {
    "source",
    "app_id",
    "event_type",
    "user_id",
    "id_type",
    "event_time",
    "event_id",
    "member_id",
    "attributes",
    "alt_ids",
    "ip",
    "user_agent",
}
_REQUIRED = ("app_id", "event_type", "user_id", "id_type", "event_time")


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise MappingError(f"{key}: expected a non-empty string, got {value!r}")
    return value


def _only_keys(spec: Mapping[str, Any], allowed: set[str], key: str) -> None:
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise MappingError(
            f"{key}.{unknown[0]}: not a mapping key (allowed: {', '.join(sorted(allowed))})"
        )


def _field_source(spec: Any, key: str) -> FieldSource:
    if isinstance(spec, str):
        return FieldSource(column=_text(spec, key))
    if not isinstance(spec, Mapping):
        raise MappingError(f"{key}: expected a column name or {{column: ...}} / {{value: ...}}")
    _only_keys(spec, {"column", "value", "prefix"}, key)
    if ("column" in spec) == ("value" in spec):
        raise MappingError(f"{key}: give exactly one of column or value")
    if "value" in spec:
        if "prefix" in spec:
            raise MappingError(f"{key}.prefix: only for a column (write the constant in full)")
        return FieldSource(value=_text(spec["value"], f"{key}.value"))
    prefix = spec.get("prefix", "")
    if not isinstance(prefix, str):
        raise MappingError(f"{key}.prefix: expected a string, got {prefix!r}")
    return FieldSource(column=_text(spec["column"], f"{key}.column"), prefix=prefix)


def _time_zone(value: Any, key: str) -> str:
    zone = _text(value, key)
    if zone == "UTC" or _OFFSET.match(zone):
        return zone
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise MappingError(
            f"{key}: {zone!r} is not a time zone (an IANA name such as Asia/Shanghai, "
            "or an offset such as +08:00)"
        ) from error
    return zone


def _event_time(spec: Any) -> EventTime:
    key = "event_time"
    if isinstance(spec, str):
        return EventTime(column=_text(spec, key))
    if not isinstance(spec, Mapping):
        raise MappingError(f"{key}: expected a column name or {{column, format, time_zone}}")
    _only_keys(spec, {"column", "format", "time_zone"}, key)
    if "column" not in spec:
        raise MappingError(f"{key}.column: required (the column holding the event time)")
    return EventTime(
        column=_text(spec["column"], f"{key}.column"),
        format=_text(spec.get("format", ISO_8601), f"{key}.format"),
        time_zone=_time_zone(spec.get("time_zone", "UTC"), f"{key}.time_zone"),
    )


def _columns_by_name(spec: Any, key: str) -> dict[str, str]:
    """A list of columns (each named after itself) or a map of name -> column."""
    if spec is None:
        return {}
    if isinstance(spec, list):
        spec = {_text(c, f"{key}[{i}]"): c for i, c in enumerate(spec)}
    if not isinstance(spec, Mapping):
        raise MappingError(f"{key}: expected a list of columns or a map of name -> column")
    return {_text(n, key): _text(c, f"{key}.{n}") for n, c in spec.items()}


def _source_options(spec: Any) -> SourceOptions:
    if spec is None:
        return SourceOptions()
    if not isinstance(spec, Mapping):
        raise MappingError("source: expected {format, header, delimiter}")
    _only_keys(spec, {"format", "header", "delimiter"}, "source")
    fmt = spec.get("format")
    if fmt is not None and fmt not in SOURCE_FORMATS:
        raise MappingError(f"source.format: {fmt!r} is not one of {', '.join(SOURCE_FORMATS)}")
    header = spec.get("header", True)
    if not isinstance(header, bool):
        raise MappingError(f"source.header: expected true or false, got {header!r}")
    delimiter = spec.get("delimiter", ",")
    if not isinstance(delimiter, str) or (len(delimiter) != 1 and delimiter != WHITESPACE):
        raise MappingError(
            f"source.delimiter: expected one character or {WHITESPACE!r}, got {delimiter!r}"
        )
    return SourceOptions(format=fmt, header=header, delimiter=delimiter)


def parse_mapping(spec: Any) -> ImportMapping:
    """A mapping from its parsed YAML/JSON document."""
    if not isinstance(spec, Mapping):
        raise MappingError("mapping: expected an object of field -> source")
    unknown = sorted(set(spec) - _FIELDS)
    if unknown:
        raise MappingError(f"{unknown[0]}: not a mapping key (keys: {', '.join(sorted(_FIELDS))})")
    for name in _REQUIRED:
        if name not in spec:
            raise MappingError(f"{name}: required (a column, or {{value: ...}} for a constant)")
    id_type = _field_source(spec["id_type"], "id_type")
    if id_type.value is not None and id_type.value not in ID_TYPES:
        raise MappingError(f"id_type.value: {id_type.value!r} is not one of {', '.join(ID_TYPES)}")
    optional = {
        name: _field_source(spec[name], name) if spec.get(name) is not None else None
        for name in ("event_id", "member_id")
    }
    return ImportMapping(
        app_id=_field_source(spec["app_id"], "app_id"),
        event_type=_field_source(spec["event_type"], "event_type"),
        user_id=_field_source(spec["user_id"], "user_id"),
        id_type=id_type,
        event_time=_event_time(spec["event_time"]),
        event_id=optional["event_id"],
        member_id=optional["member_id"],
        attributes=_columns_by_name(spec.get("attributes"), "attributes"),
        alt_ids=_columns_by_name(spec.get("alt_ids"), "alt_ids"),
        ip=_text(spec["ip"], "ip") if spec.get("ip") is not None else None,
        user_agent=(
            _text(spec["user_agent"], "user_agent") if spec.get("user_agent") is not None else None
        ),
        source=_source_options(spec.get("source")),
    )


def load_mapping(path: str | Path) -> ImportMapping:
    """A mapping file: JSON when it ends in ``.json``, YAML otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise MappingError(f"mapping file {path}: {error.strerror or error}") from error
    try:
        spec = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        kind = path.suffix[1:] or "yaml"
        raise MappingError(f"mapping file {path}: not valid {kind}: {error}") from error
    return parse_mapping(spec)
