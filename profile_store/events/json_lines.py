"""Landing lines to typed fields, without coercion: a value of the wrong JSON type is an error.

Spark's JSON reader turns ``"user_id": true`` into the string ``"true"``, an object inside a
string field into its text, and a top-level array into several rows. Here each line is parsed
once into a VARIANT (``try_parse_json``), which keeps every value's JSON type, so a row can be
checked against the event contract (``event.schema.json``) before anything is extracted.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.events.schema import MAP_FIELDS, STRING_FIELDS

LINE = "line"  # the line exactly as received
PARSED = "_parsed"  # the line as a VARIANT (null: not JSON)
TYPE_ERROR = "type_error"  # "<field>: expected ..., got ..." for the first wrong value, or null

_FIELDS = (*STRING_FIELDS, *MAP_FIELDS)
_TYPED = "struct<{}>".format(
    ", ".join(
        [f"`{name}`: string" for name in STRING_FIELDS]
        + [f"`{name}`: map<string, string>" for name in MAP_FIELDS]
    )
)


def json_type(value: Column) -> Column:
    """The JSON type of a VARIANT value: string, number, boolean, null, object or array."""
    schema = F.schema_of_variant(value)
    return (
        F.when(schema == "STRING", F.lit("string"))
        .when(schema == "BOOLEAN", F.lit("boolean"))
        .when(schema == "VOID", F.lit("null"))
        .when(schema.startswith("OBJECT"), F.lit("object"))
        .when(schema.startswith("ARRAY"), F.lit("array"))
        .otherwise(F.lit("number"))
    )


def _field(name: str) -> Column:
    """The field as a VARIANT: SQL null when absent, a variant null when sent as ``null``."""
    return F.variant_get(F.col(PARSED), f"$['{name}']", "variant")


def _string_error(name: str) -> Column:
    """A string field sent as anything but a string or ``null`` (null counts as absent)."""
    kind = json_type(_field(name))
    return F.when(
        _field(name).isNotNull() & ~kind.isin("string", "null"),
        F.format_string("%s: expected a string, got %s", F.lit(name), kind),
    )


def _map_error(name: str) -> Column:
    """A map field that is not an object of strings (``null`` counts as absent)."""
    value = _field(name)
    kind = json_type(value)
    entries = F.map_entries(F.try_variant_get(F.col(PARSED), f"$['{name}']", "map<string,variant>"))
    bad = F.filter(entries, lambda entry: json_type(entry["value"]) != "string")
    return F.when(value.isNull() | (kind == "null"), F.lit(None)).otherwise(
        F.when(
            kind != "object", F.format_string("%s: expected an object, got %s", F.lit(name), kind)
        ).when(
            F.size(bad) > 0,
            F.format_string(
                "%s.%s: expected a string, got %s",
                F.lit(name),
                bad[0]["key"],
                json_type(bad[0]["value"]),
            ),
        )
    )


def unknown_fields(line: Column) -> Column:
    """Top-level keys of the line that the contract does not name."""
    return F.array_except(F.json_object_keys(line), F.array(*[F.lit(name) for name in _FIELDS]))


def typed_lines(lines: DataFrame) -> DataFrame:
    """``lines`` (a ``line`` column) plus what the line is and every contract field.

    Added: ``is_json``, ``is_object``, ``unknown_field_count`` (top-level keys the contract
    does not name), ``type_error`` (the first value of the wrong JSON type, described) and each
    field extracted as a string or a string map (null where absent or not of its type).
    """
    parsed = lines.withColumn(PARSED, F.try_parse_json(F.col(LINE)))
    is_object = F.col(PARSED).isNotNull() & F.ltrim(F.col(LINE)).startswith("{")
    present = [F.when(_field(name).isNotNull(), 1).otherwise(0) for name in _FIELDS]
    type_error = F.coalesce(
        *[_string_error(name) for name in STRING_FIELDS],
        *[_map_error(name) for name in MAP_FIELDS],
    )
    typed = F.try_variant_get(F.col(PARSED), "$", _TYPED)
    return parsed.select(
        *lines.columns,
        F.col(PARSED).isNotNull().alias("is_json"),
        is_object.alias("is_object"),
        F.when(
            is_object, F.size(F.json_object_keys(F.col(LINE))) - sum(present[1:], present[0])
        ).alias("unknown_field_count"),
        F.when(is_object, type_error).alias(TYPE_ERROR),
        *[typed[name].alias(name) for name in _FIELDS],
    )
