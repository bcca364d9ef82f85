"""Writing a day's compacted rows in bulk into the embedded gateway's store.

A day rewrites every id of every person who changed: about a million cells per million events.
Through Thrift each row is a Python dict built on an executor, a read, and a mutation decoded by
the gateway. In bulk, Spark computes the cells itself (no Python per row), writes them as Parquet
into a staging directory beside the store, and the store adopts each file in one transaction
(``hbase_gateway.bulk_load``), with the outcome of ``profile_writer.replace_profiles``: the same
cells, timestamps, deletes of dropped segments, and rows of a later day left alone.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.hbase_gateway.bulk_load import (
    BulkLoadResult,
    RowReplacement,
    cell_files,
    load_replacing_rows,
)
from profile_store.hbase_gateway.store import Store
from profile_store.profiles.profile_writer import REPLACED
from profile_store.profiles.table import AS_OF, MASTER, PROFILE_PREFIX, TYPE_PROFILE

PROFILE_REPLACEMENT = RowReplacement(families=REPLACED, columns=(MASTER,), guard=AS_OF)
STAGING_PREFIX = "bulk-load-"
"""Staging directories under the store's data directory; a load removes its own."""


def _utf8(column: Column | str) -> Column:
    return F.encode(column, "UTF-8")


def _decimal(column: Column | str) -> Column:
    """``encode_ms``: ASCII decimal."""
    return _utf8(F.col(column).cast("string") if isinstance(column, str) else column.cast("string"))


def _int64(column: Column) -> Column:
    """8 bytes, big-endian two's complement."""
    return F.unhex(F.lpad(F.hex(column.cast("bigint")), 16, "0"))


def _float64(column: Column) -> Column:
    """8 bytes, big-endian IEEE 754, as ``struct.pack('>d')``."""
    bits = F.call_function(
        "java_method",
        F.lit("java.lang.Double"),
        F.lit("doubleToRawLongBits"),
        column.cast("double"),
    )
    return _int64(bits.cast("bigint"))


def _cell(family: str, qualifier: Column, value: Column) -> Column:
    return F.struct(
        F.lit(family).alias("family"), qualifier.alias("qualifier"), value.alias("value")
    )


def profile_cell_frame(rows: DataFrame, half_life_ms: int, as_of_ms: int) -> DataFrame:
    """The cells of ``compacted_rows`` as ``(row, family, qualifier, value)``, byte for byte
    ``table.profile_cells`` of ``profile_writer.profile_row``."""
    own = [
        _cell("s", F.lit(b"type"), F.lit(TYPE_PROFILE)),
        _cell("s", F.lit(b"first_seen"), _decimal("first_seen_ms")),
        _cell("s", F.lit(b"id_type"), _utf8("id_type")),
        _cell("s", F.lit(b"devices"), _decimal("devices")),
        _cell("s", F.lit(b"as_of"), _utf8(F.lit(str(int(as_of_ms))))),
    ]
    master = F.when(
        F.col("master") != F.col("profile"),
        F.array(_cell("s", F.lit(b"master"), _utf8("master"))),
    ).otherwise(F.array().cast("array<struct<family:string,qualifier:binary,value:binary>>"))
    segments = F.transform(
        F.map_entries(F.coalesce("segments", F.create_map().cast("map<string,bigint>"))),
        lambda entry: _cell("g", _utf8(entry["key"]), _decimal(entry["value"])),
    )
    counters = F.transform(
        F.map_entries(
            F.coalesce(
                "counters",
                F.create_map().cast("map<string,struct<value:double,last_ms:bigint>>"),
            )
        ),
        lambda entry: _cell(
            "f",
            _utf8(entry["key"]),
            F.concat(
                _float64(entry["value"]["value"]),
                _int64(entry["value"]["last_ms"]),
                _int64(F.lit(int(half_life_ms))),
            ),
        ),
    )
    associations = F.transform(
        F.coalesce("associations", F.array()),
        lambda other: _cell(
            "a", _utf8(other["profile"]), _utf8(F.coalesce(other["id_type"], F.lit("")))
        ),
    )
    cells = F.concat(F.array(*own), master, segments, counters, associations)
    return rows.select(
        F.concat(F.lit(PROFILE_PREFIX), _utf8("profile")).alias("row"),
        F.explode(cells).alias("cell"),
    ).select("row", "cell.family", "cell.qualifier", "cell.value")


def bulk_replace_profiles(
    rows: DataFrame,
    store_dir: str | Path,
    table_name: str,
    half_life_ms: int,
    as_of_ms: int,
    timestamp: int,
) -> tuple[int, int]:
    """Replace every row of ``rows`` (``compacted_rows``) in the store at ``store_dir``;
    returns (rows, stale cells removed), as ``profile_writer.write_profiles``."""
    store_dir = Path(store_dir)
    store_dir.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=store_dir))
    try:
        cells = profile_cell_frame(rows, half_life_ms, as_of_ms)
        (
            cells.write.mode("overwrite")
            .option("maxRecordsPerFile", 0)  # a row's cells stay in one file
            .parquet(staging.resolve().as_uri())
        )
        result = load_profiles(store_dir, table_name, cell_files(staging), timestamp)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return result.rows, result.cells_deleted


def load_profiles(
    store_dir: str | Path, table_name: str, files: list[Path], timestamp: int
) -> BulkLoadResult:
    """Adopt cell files of profile rows into ``table_name`` of the store at ``store_dir``."""
    store = Store(store_dir)
    try:
        return load_replacing_rows(
            store, table_name.encode(), files, PROFILE_REPLACEMENT, timestamp
        )
    finally:
        store.close()
