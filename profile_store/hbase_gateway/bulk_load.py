"""Bulk loads: a batch job's rows adopted by the store from files, without a call per row.

HBase's answer to a day's batch writes is bulk load: the job writes its cells into files and the
region servers adopt the files, instead of taking billions of puts through a Thrift server. The
gateway's equivalent: the job (Spark) writes the cells of whole rows as Parquet files, and the
store adopts each file in one SQLite transaction, set-based (SQL over a temporary table of the
file's cells) rather than a decoded Thrift mutation per row.

What a load does to each row of a file is a *replacement*, the same outcome as the per-row
read-and-batch it stands for (``profiles.profile_writer.replace_profiles``):

* a row whose stored ``guard`` column holds a greater integer than the file's is left as it is
  (a later computation wrote it);
* the file's cells are put, only those whose value differs from the stored newest value;
* every stored column of the replaced families (and each replaced column) that the file does
  not hold for the row is deleted, as a column delete would delete it.

Each put and delete carries the load's timestamp, as a ``mutateRowsTs`` would. A row never
spans two files (Spark writes one file per partition, and a row's cells come from one input
row), so every row changes atomically; a file's transaction keeps other writers waiting only
for that file, not for the whole load.

A batch (a file's cells, as Arrow) has the columns ``row`` (binary), ``family`` (string),
``qualifier`` (binary) and ``value`` (binary); a cell repeated in a batch keeps its last value.

The job stages its files in a directory of the store's data directory (``bulk_staging``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from .arrow_cells import insert_cells
from .errors import GatewayIllegalArgument
from .schema import parse_column
from .store import Store, TableWrite


@dataclass(frozen=True)
class RowReplacement:
    """What a load replaces of every row it holds."""

    families: tuple[bytes, ...] = ()
    """Families whose columns absent from the file are deleted."""
    columns: tuple[bytes, ...] = ()
    """``family:qualifier`` columns deleted when absent from the file."""
    guard: bytes | None = None
    """A ``family:qualifier`` holding a decimal integer: a row whose stored value is greater
    than the file's is not touched."""


@dataclass(frozen=True)
class BulkLoadResult:
    batches: int
    rows: int
    rows_kept: int
    """Rows left as they were by the guard."""
    cells_put: int
    cells_deleted: int


def cell_files(directory: Path) -> list[Path]:
    """The Parquet files Spark wrote into ``directory`` (its ``_SUCCESS`` and hidden files
    aside), in name order."""
    return sorted(
        path
        for path in directory.glob("*.parquet")
        if not path.name.startswith((".", "_")) and path.stat().st_size > 0
    )


def load_replacing_rows(
    store: Store,
    table: bytes,
    batches: Iterable[pa.Table],
    replacement: RowReplacement,
    timestamp: int,
) -> BulkLoadResult:
    """Adopt ``batches`` of cells (``row``, ``family``, ``qualifier``, ``value``; whole rows
    each: a file's) into
    ``table``, each in one transaction (see the module's docstring)."""
    if not 0 <= timestamp < 2**63 - 1:
        raise GatewayIllegalArgument(f"bulk load timestamp out of range: {timestamp}")
    totals = [0, 0, 0, 0]
    count = 0
    for cells in batches:
        count += 1
        if cells.num_rows == 0:
            continue
        with store.table_write(table) as write:
            _check_no_ttl(write)
            counts = _replace_rows(write, cells, replacement, timestamp)
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
    return BulkLoadResult(count, *totals)


def _check_no_ttl(write: TableWrite) -> None:
    if any(family.ttl_ms is not None for family in write.info.families):
        raise GatewayIllegalArgument(
            f"bulk load into {write.info.name.decode()!r}: a table with a TTL is not supported "
            "(expired cells would count as stored)"
        )


def _replace_rows(
    write: TableWrite, cells: pa.Table, replacement: RowReplacement, timestamp: int
) -> tuple[int, int, int, int]:
    conn, info = write.conn, write.info
    family_ids = {name.decode(): info.family_id(name) for name in info.family_index}
    # In key order, each insert into the temporary table's B-tree appends.
    cells = cells.sort_by(
        [("row", "ascending"), ("family", "ascending"), ("qualifier", "ascending")]
    )
    families = cells.column("family").combine_chunks()
    if families.null_count:
        raise GatewayIllegalArgument("bulk load: a cell's family is null")
    positions = pc.index_in(families, value_set=pa.array(list(family_ids), pa.string()))
    if positions.null_count:
        unknown = families.filter(positions.is_null())[0].as_py()
        write.info.family_id(unknown.encode())  # raises HBase's NoSuchColumnFamily
    ids = pa.array(list(family_ids.values()), pa.int64()).take(positions)
    conn.execute("PRAGMA temp_store = MEMORY")  # the file's cells, once, for this transaction
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS bulk_cells (row BLOB, fam INTEGER, qual BLOB, "
        "value BLOB, PRIMARY KEY (row, fam, qual)) WITHOUT ROWID"
    )
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS bulk_rows (row BLOB PRIMARY KEY) WITHOUT ROWID")
    conn.execute("DELETE FROM bulk_cells")
    conn.execute("DELETE FROM bulk_rows")
    insert_cells(conn, "bulk_cells", cells, ids)
    conn.execute("INSERT INTO bulk_rows SELECT DISTINCT row FROM bulk_cells")
    (rows,) = conn.execute("SELECT count(*) FROM bulk_rows").fetchone()
    stored = info.cells_table
    # The stored newest value of the column of bulk cell ``b``.
    newest = (
        f"(SELECT c.value FROM {stored} c WHERE c.row = b.row AND c.fam = b.fam "
        "AND c.qual = b.qual ORDER BY c.ts DESC LIMIT 1)"
    )
    kept = 0
    if replacement.guard is not None:
        fam, qual = _column_ids(info, replacement.guard)
        later = conn.execute(
            f"DELETE FROM bulk_rows WHERE row IN (SELECT b.row FROM bulk_cells b "
            f"WHERE b.fam = ? AND b.qual = ? "
            f"AND CAST({newest} AS INTEGER) > CAST(b.value AS INTEGER))",
            (fam, qual),
        )
        kept = later.rowcount
        if kept:
            conn.execute("DELETE FROM bulk_cells WHERE row NOT IN (SELECT row FROM bulk_rows)")
    replaced = [info.family_id(name) for name in replacement.families]
    columns = [_column_ids(info, name) for name in replacement.columns]
    # Each join below takes the file's rows first (``CROSS JOIN``): SQLite has no statistics of
    # the temporary tables and would otherwise scan the whole stored table, once per file.
    stale: list[tuple[bytes, int, bytes | None, int]] = []
    if replaced or columns:
        conditions = []
        params: list[object] = []
        if replaced:
            conditions.append(f"c.fam IN ({','.join('?' * len(replaced))})")
            params += replaced
        for fam, qual in columns:
            conditions.append("(c.fam = ? AND c.qual = ?)")
            params += [fam, qual]
        stale = [
            (row, fam, qual, timestamp)
            for row, fam, qual in conn.execute(
                f"SELECT DISTINCT c.row, c.fam, c.qual FROM bulk_rows r "
                f"CROSS JOIN {stored} c ON c.row = r.row WHERE ({' OR '.join(conditions)}) "
                "AND NOT EXISTS (SELECT 1 FROM bulk_cells b WHERE b.row = c.row "
                "AND b.fam = c.fam AND b.qual = c.qual)",
                params,
            )
        ]
    changed = (
        f"SELECT b.row, b.fam, b.qual, ?, b.value FROM bulk_cells b WHERE {newest} IS NOT b.value"
    )
    masking = conn.execute(
        f"SELECT 1 FROM bulk_rows r CROSS JOIN {info.markers_table} m ON m.row = r.row "
        "WHERE m.ts >= ? LIMIT 1",
        (timestamp,),
    ).fetchone()
    if masking:  # a delete marker at or after the load's timestamp: HBase masks such puts
        cells_put = conn.execute(changed, (timestamp,)).fetchall()
        write.put(cells_put)
        put = len(cells_put)
    else:  # nothing can mask them: straight from the temporary table
        put = conn.execute(f"INSERT OR REPLACE INTO {stored} {changed}", (timestamp,)).rowcount
        write.cells += put
    write.delete(stale)
    conn.execute("DELETE FROM bulk_cells")
    conn.execute("DELETE FROM bulk_rows")
    return rows, kept, put, len(stale)


def _column_ids(info, column: bytes) -> tuple[int, bytes]:
    family, qualifier = parse_column(column)
    if qualifier is None:
        raise GatewayIllegalArgument(f"bulk load: {column!r} names no qualifier")
    return info.family_id(family), qualifier
