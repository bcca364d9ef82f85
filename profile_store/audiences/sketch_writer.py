"""Writing a day's sketch rows to HBase from Spark executors, and removing stale rows.

Each Spark partition opens its own happybase connection and writes in batches (its rows arrive
as Arrow batches, ``arrow_partitions``), so the rows never pass through the driver; the driver
only learns the row keys, to delete the rows of an earlier run of the same day that this run no
longer produces.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict

from pyspark.sql import DataFrame

from profile_store.audiences.rowkey import day_prefix
from profile_store.audiences.sketch_table import delete_rows, keys_with_prefix, write_rows
from profile_store.hbase.settings import ThriftAddress
from profile_store.spark.arrow_partitions import sum_over_partitions


def _write_partition(
    rows: Iterator[dict], address: dict, table_name: str, batch_size: int
) -> tuple[int]:
    connection = ThriftAddress(**address).connect()
    try:
        return (write_rows(connection.table(table_name), rows, batch_size),)
    finally:
        connection.close()


def write_sketch_rows(
    rows: DataFrame, address: ThriftAddress, table_name: str, batch_size: int = 500
) -> int:
    """Put every row of ``rows`` (``day_sketch_rows`` output) from the executors."""
    settings = asdict(address)
    (written,) = sum_over_partitions(
        rows, lambda part: _write_partition(part, settings, table_name, batch_size)
    )
    return written


def remove_stale_rows(table, day, pairs: Iterable[tuple[str, str]], keep: set[bytes]) -> int:
    """Delete the day's rows of ``pairs`` whose keys are not in ``keep`` (written by this run)."""
    stale = [
        key
        for app_id, event_type in sorted(set(pairs))
        for key in keys_with_prefix(table, day_prefix(app_id, event_type, day))
        if key not in keep
    ]
    return delete_rows(table, stale)
