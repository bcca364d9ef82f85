"""A lake area read with Arrow, without Spark: for the reads that must answer in seconds.

Erasure's resolution and the identity explanation read a few columns of every day of an
identity area; starting a Spark session for them would cost more than the read.
"""

from __future__ import annotations

import io
from pathlib import PurePosixPath

import pyarrow as pa
import pyarrow.parquet as pq

from profile_store.lake.storage import LakeStorage


def read_area(storage: LakeStorage, relative: str, columns: list[str]) -> pa.Table:
    """Every Parquet file under ``relative`` (all days), ``columns`` only."""
    tables = []
    if storage.exists(relative):
        for entry in storage.list_files(relative):
            name = PurePosixPath(entry.path).name
            if name.endswith(".parquet") and not name.startswith(("_", ".")):
                data = storage.read_bytes(entry.path)
                tables.append(pq.read_table(io.BytesIO(data), columns=columns))
    if not tables:
        return pa.table({name: pa.array([], pa.string()) for name in columns})
    return pa.concat_tables(tables, promote_options="permissive")
