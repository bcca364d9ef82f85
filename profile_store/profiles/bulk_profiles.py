"""Writing a day's compacted rows in bulk into the embedded gateway's store.

A day rewrites every id of every person who changed: about a million cells per million events.
Through Thrift each row is a Python dict built on an executor, a read, and a mutation decoded by
the gateway. In bulk, Spark computes the cells itself (no Python per row), writes them as Parquet
into a staging directory beside the store, and the store adopts each file in one transaction
(``hbase_gateway.bulk_load``), with the outcome of ``profile_writer.replace_profiles``: the same
cells, timestamps, deletes of dropped segments, and rows of a later day left alone.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from profile_store.hbase_gateway.bulk_load import (
    BulkLoadResult,
    RowReplacement,
    cell_files,
    load_replacing_rows,
)
from profile_store.hbase_gateway.bulk_staging import staging_directory
from profile_store.hbase_gateway.store import Store
from profile_store.profiles.profile_writer import REPLACED
from profile_store.profiles.table import AS_OF, MASTER, PROFILE_PREFIX, TYPE_PROFILE

PROFILE_REPLACEMENT = RowReplacement(families=REPLACED, columns=(MASTER,), guard=AS_OF)


def _utf8(column: Column | str) -> Column:
    return F.encode(column, "UTF-8")


def _decimal(column: Column | str) -> Column:
    """``encode_ms``: ASCII decimal."""
    return _utf8((F.col(column) if isinstance(column, str) else column).cast("string"))


def _cell(family: str, qualifier: Column, value: Column, counter: Column | None = None) -> Column:
    if counter is None:
        counter = F.lit(None).cast("struct<value:double,last_ms:bigint>")
    return F.struct(
        F.lit(family).alias("family"),
        qualifier.alias("qualifier"),
        value.alias("value"),
        counter.alias("counter"),
    )


def profile_cell_frame(rows: DataFrame, as_of_ms: int) -> DataFrame:
    """The cells of ``compacted_rows`` as ``(row, family, qualifier, value, counter)``, byte
    for byte ``table.profile_cells`` of ``profile_writer.profile_row`` once ``counter_values``
    has packed the counters (their ``value`` is null here)."""
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
    ).otherwise(F.array().cast(f"array<{_CELL_TYPE}>"))
    segments = F.transform(
        F.map_entries(F.coalesce("segments", F.create_map().cast("map<string,bigint>"))),
        lambda entry: _cell("g", _utf8(entry["key"]), _decimal(entry["value"])),
    )
    # A counter's value is a double: its 8 bytes are packed in Arrow (``counter_values``), as
    # Spark SQL has no function giving a double's bits.
    counters = F.transform(
        F.map_entries(
            F.coalesce(
                "counters",
                F.create_map().cast("map<string,struct<value:double,last_ms:bigint>>"),
            )
        ),
        lambda entry: _cell("f", _utf8(entry["key"]), F.lit(None).cast("binary"), entry["value"]),
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
    ).select("row", "cell.family", "cell.qualifier", "cell.value", "cell.counter")


_CELL_TYPE = (
    "struct<family:string,qualifier:binary,value:binary,"
    "counter:struct<value:double,last_ms:bigint>>"
)
_COUNTER = np.dtype([("value", ">f8"), ("last_ms", ">i8"), ("half_life_ms", ">i8")])


def counter_values(cells: pa.Table, half_life_ms: int) -> pa.Table:
    """``cells`` of ``profile_cell_frame`` with each counter's value packed as
    ``table.encode_counter`` packs it (big-endian double, time, half-life), for the store."""
    counter = cells.column("counter").combine_chunks()
    is_counter = counter.is_valid()
    if not pc.any(is_counter).as_py():
        return cells.select(["row", "family", "qualifier", "value"])
    packed = np.zeros(len(cells), dtype=_COUNTER)
    packed["value"] = counter.field("value").fill_null(0.0).to_numpy(zero_copy_only=False)
    packed["last_ms"] = counter.field("last_ms").fill_null(0).to_numpy(zero_copy_only=False)
    packed["half_life_ms"] = half_life_ms
    encoded = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(_COUNTER.itemsize), len(cells), [None, pa.py_buffer(packed.tobytes())]
    ).cast(pa.binary())
    value = pc.if_else(is_counter, encoded, cells.column("value").combine_chunks())
    return pa.table(
        {
            "row": cells.column("row"),
            "family": cells.column("family"),
            "qualifier": cells.column("qualifier"),
            "value": value,
        }
    )


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
    with staging_directory(store_dir) as staging:
        files = staging / "cells"  # Spark's overwrite replaces this, not the owned directory
        cells = profile_cell_frame(rows, as_of_ms)
        (
            cells.write.mode("overwrite")
            .option("maxRecordsPerFile", 0)  # a row's cells stay in one file
            .parquet(files.resolve().as_uri())
        )
        result = load_profiles(store_dir, table_name, cell_files(files), half_life_ms, timestamp)
    return result.rows, result.cells_deleted


def load_profiles(
    store_dir: str | Path, table_name: str, files: list[Path], half_life_ms: int, timestamp: int
) -> BulkLoadResult:
    """Adopt cell files of profile rows (``profile_cell_frame``) into ``table_name`` of the
    store at ``store_dir``, each file in one transaction."""
    batches = (counter_values(pq.read_table(path), half_life_ms) for path in files)
    store = Store(store_dir)
    try:
        return load_replacing_rows(
            store, table_name.encode(), batches, PROFILE_REPLACEMENT, timestamp
        )
    finally:
        store.close()
