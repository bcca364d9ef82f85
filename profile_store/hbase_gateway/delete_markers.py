"""How puts and deletes land in a table's cells, as HBase applies them.

A delete physically removes the versions it covers at once and leaves a marker in
``markers_<id>(row, fam, kind, qual, ts)`` (a family delete, or a column delete) that masks
later puts of the same or older timestamps until a major compaction drops it, which is HBase's
visible behaviour. Each function runs inside a write transaction of the store.
"""

from __future__ import annotations

import sqlite3

from .schema import StoredCell, TableInfo

Delete = tuple[bytes, int, bytes | None, int]
"""``(row, family id, qualifier or None for the family, timestamp)``."""

_FAMILY_MARKER, _COLUMN_MARKER = 0, 1
_IN_CHUNK = 500  # row keys per ``IN (...)`` lookup of markers


def apply_puts(conn: sqlite3.Connection, info: TableInfo, puts: list[StoredCell]) -> None:
    """Write ``puts``, but those a delete marker masks."""
    if not puts:
        return
    if conn.execute(f"SELECT 1 FROM {info.markers_table} LIMIT 1").fetchone():
        puts = _unmasked(conn, info, puts)
    conn.executemany(f"INSERT OR REPLACE INTO {info.cells_table} VALUES (?,?,?,?,?)", puts)


def apply_deletes(conn: sqlite3.Connection, info: TableInfo, deletes: list[Delete]) -> None:
    """Remove the versions each delete covers (at or before its timestamp) and mark it."""
    if not deletes:
        return
    families = [(row, fam, ts) for row, fam, qual, ts in deletes if qual is None]
    columns = [(row, fam, qual, ts) for row, fam, qual, ts in deletes if qual is not None]
    upsert = (
        f"INSERT INTO {info.markers_table} VALUES (?,?,?,?,?) "
        "ON CONFLICT (row, fam, kind, qual) DO UPDATE SET ts = max(ts, excluded.ts)"
    )
    if families:
        conn.executemany(
            f"DELETE FROM {info.cells_table} WHERE row = ? AND fam = ? AND ts <= ?", families
        )
        conn.executemany(upsert, [(row, fam, _FAMILY_MARKER, b"", ts) for row, fam, ts in families])
    if columns:
        conn.executemany(
            f"DELETE FROM {info.cells_table} WHERE row = ? AND fam = ? AND qual = ? AND ts <= ?",
            columns,
        )
        conn.executemany(
            upsert, [(row, fam, _COLUMN_MARKER, qual, ts) for row, fam, qual, ts in columns]
        )


def drop_markers(conn: sqlite3.Connection, info: TableInfo) -> None:
    """Forget every delete of the table: a major compaction's, as in HBase."""
    conn.execute(f"DELETE FROM {info.markers_table}")


def _unmasked(
    conn: sqlite3.Connection, info: TableInfo, puts: list[StoredCell]
) -> list[StoredCell]:
    """Drop puts that a delete marker (at or after their timestamp) masks."""
    markers: dict[bytes, dict[tuple[int, int, bytes], int]] = {}
    rows = list(dict.fromkeys(cell[0] for cell in puts))
    for start in range(0, len(rows), _IN_CHUNK):
        part = rows[start : start + _IN_CHUNK]
        found = conn.execute(
            f"SELECT row, fam, kind, qual, ts FROM {info.markers_table} "
            f"WHERE row IN ({','.join('?' * len(part))})",
            part,
        )
        for row, fam, kind, qual, ts in found:
            markers.setdefault(row, {})[(fam, kind, qual)] = ts
    if not markers:
        return puts
    kept: list[StoredCell] = []
    for cell in puts:
        row_markers = markers.get(cell[0])
        if row_markers:
            fam, qual, ts = cell[1], cell[2], cell[3]
            masked_until = max(
                row_markers.get((fam, _FAMILY_MARKER, b""), -1),
                row_markers.get((fam, _COLUMN_MARKER, qual), -1),
            )
            if ts <= masked_until:
                continue
        kept.append(cell)
    return kept
