"""Landing lines to typed fields, without coercion: a value of the wrong JSON type is an error.

Spark's JSON reader turns ``"user_id": true`` into the string ``"true"``, an object inside a
string field into its text, and a top-level array into several rows. Here each line is parsed
once into a VARIANT (``try_parse_json``), which keeps every value's JSON type, so a row can be
checked against the event contract (``event.schema.json``) before anything is extracted.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.events.rules import WRONG_TYPE_FIELD
from profile_store.events.schema import MAP_FIELDS, STRING_FIELDS

LINE = "line"  # the line exactly as received
PARSED = "_parsed"  # the line as a VARIANT (null: not JSON)

_FIELDS = (*STRING_FIELDS, *MAP_FIELDS)


def type_name(schema: Column) -> Column:
    """The JSON type named by a ``schema_of_variant`` string: string, number, boolean, null,
    object or array."""
    return (
        F.when(schema == "STRING", F.lit("string"))
        .when(schema == "BOOLEAN", F.lit("boolean"))
        .when(schema == "VOID", F.lit("null"))
        .when(schema.startswith("OBJECT"), F.lit("object"))
        .when(schema.startswith("ARRAY"), F.lit("array"))
        .otherwise(F.lit("number"))
    )


def json_type(value: Column) -> Column:
    """The JSON type of a VARIANT value."""
    return type_name(F.schema_of_variant(value))


def _field(name: str) -> Column:
    """The field as a VARIANT: SQL null when absent, a variant null when sent as ``null``."""
    return F.variant_get(F.col(PARSED), f"$['{name}']", "variant")


def _wrong_type(name: str) -> Column:
    """The field holds a value of another type than the contract's (null counts as absent)."""
    schema = F.schema_of_variant(_field(name))
    if name in MAP_FIELDS:
        not_an_object = (schema != "VOID") & ~schema.startswith("OBJECT")
        wrong = not_an_object | ~_all_strings(name)
    else:
        wrong = ~schema.isin("STRING", "VOID")
    return F.coalesce(wrong, F.lit(False))


def describe_wrong_type(parsed: Column, field: Column) -> Column:
    """``"<field>: expected ..., got ..."`` for the field ``_wrong_type`` flagged (its name in
    ``field``). One expression for every field, evaluated for quarantined rows only."""
    value = F.try_variant_get(parsed, "$", "map<string,variant>")[field]
    kind = json_type(value)
    entries = F.map_entries(F.try_variant_get(value, "$", "map<string,variant>"))
    bad = F.filter(entries, lambda entry: F.schema_of_variant(entry["value"]) != "STRING")
    return (
        F.when(
            ~field.isin(*MAP_FIELDS), F.format_string("%s: expected a string, got %s", field, kind)
        )
        .when(kind != "object", F.format_string("%s: expected an object, got %s", field, kind))
        .otherwise(
            F.format_string(
                "%s.%s: expected a string, got %s", field, bad[0]["key"], json_type(bad[0]["value"])
            )
        )
    )


def _all_strings(name: str) -> Column:
    """Every value of the object field is a string (true when absent or not an object)."""
    values = F.map_values(F.try_variant_get(F.col(PARSED), f"$['{name}']", "map<string,variant>"))
    return F.coalesce(F.forall(values, lambda v: F.schema_of_variant(v) == "STRING"), F.lit(True))


def unknown_fields(line: Column) -> Column:
    """Top-level keys of the line that the contract does not name."""
    return F.array_except(F.json_object_keys(line), F.array(*[F.lit(name) for name in _FIELDS]))


def _contract_pattern() -> str:
    """A regular expression that only the ``schema_of_variant`` of a conforming line matches:
    an object of contract fields, each a string or null, the two maps objects of strings.

    Keys of such a schema are sorted, unique (a repeated key is not JSON here) and backquoted,
    with backquotes doubled, unless they are plain identifiers, so no key can end early. For
    the same reason no repetition ever has to give back what it matched: the quantifiers are
    possessive (``*+``), and Java's matcher keeps no backtracking state for them.
    """
    key = r"(?:[A-Za-z_][A-Za-z0-9_]*+|`(?:[^`]|``)*+`)"
    strings = "(?:{}): (?:STRING|VOID)".format("|".join(STRING_FIELDS))
    maps = "(?:{}): (?:VOID|OBJECT<(?:{key}: STRING(?:, {key}: STRING)*+)?>)".format(
        "|".join(MAP_FIELDS), key=key
    )
    field = f"(?:{strings}|{maps})"
    return rf"^OBJECT<(?:{field}(?:, {field})*+)?>\z"


CONTRACT_PATTERN = _contract_pattern()
# What a conforming line holds, read by Spark's JSON parser: for such a line it is exact (every
# value is a string or null, no key repeats), and cheaper than a VARIANT lookup per field.
_FIELD_TYPES = {
    **{name: "string" for name in STRING_FIELDS},
    **{name: "map<string, string>" for name in MAP_FIELDS},
}
_CONTRACT_STRUCT = ", ".join(f"`{name}` {kind}" for name, kind in _FIELD_TYPES.items())


def typed_lines(lines: DataFrame) -> DataFrame:
    """``lines`` (a ``line`` column) plus what the line is and every contract field.

    Added: ``is_json``, ``is_object``, ``unknown_field_count`` (top-level keys the contract
    does not name), ``wrong_type_field`` (the first field whose value is of the wrong JSON
    type) and each field extracted as a string or a string map.

    One pass over each value decides almost every line: the line's ``schema_of_variant``
    matches ``CONTRACT_PATTERN``, and its fields are then read by ``from_json`` (a VARIANT
    lookup per field builds a cast expression per value: a third of the typing's time). Only a
    line that does not match (a rejected one, or an unusual spelling of a valid one) has its
    keys and each field's type looked at one by one, and its fields read from the VARIANT.
    """
    parsed = lines.select(*lines.columns, F.try_parse_json(F.col(LINE)).alias(PARSED))
    schema = F.schema_of_variant(F.col(PARSED))
    inspected = parsed.select(
        *lines.columns,
        PARSED,
        F.col(PARSED).isNotNull().alias("is_json"),
        F.coalesce(schema.rlike(CONTRACT_PATTERN), F.lit(False)).alias("_conforms"),
        F.coalesce(schema.startswith("OBJECT<"), F.lit(False)).alias("is_object"),
    )
    looked_at = ~F.col("_conforms") & F.col("is_object")
    wrong_type_field = F.coalesce(*[F.when(_wrong_type(name), F.lit(name)) for name in _FIELDS])
    extracted = inspected.select(
        *lines.columns,
        PARSED,
        "_conforms",
        "is_json",
        "is_object",
        F.when(F.col("_conforms"), F.lit(0))
        .when(looked_at, F.size(unknown_fields(F.col(LINE))))
        .alias("unknown_field_count"),
        F.when(looked_at, wrong_type_field).alias(WRONG_TYPE_FIELD),
        F.when(F.col("_conforms"), F.from_json(F.col(LINE), _CONTRACT_STRUCT)).alias("_fields"),
    )
    return extracted.select(
        *lines.columns,
        "is_json",
        "is_object",
        "unknown_field_count",
        WRONG_TYPE_FIELD,
        *[
            F.when(F.col("_conforms"), F.col("_fields")[name])
            .otherwise(F.try_variant_get(F.col(PARSED), f"$['{name}']", kind))
            .alias(name)
            for name, kind in _FIELD_TYPES.items()
        ],
    )
