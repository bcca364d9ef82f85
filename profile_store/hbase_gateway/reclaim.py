"""The compaction pass over one table: reclaim the cell versions reads no longer see.

Versions beyond their family's ``max_versions`` and cells past its TTL are deleted, a major
compaction also drops every delete marker of the table (``Store.compact`` runs this; when to
run it is ``compaction.py``'s, what else a major compaction does ``major_compaction.py``'s).
The table is processed in row chunks of short transactions, so readers (WAL) are never blocked
and writers wait at most one chunk.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .delete_markers import drop_markers
from .errors import table_not_found
from .schema import TableInfo, now_ms

if TYPE_CHECKING:
    from .store import Store

_CHUNK_ROWS = 2000  # rows per compaction transaction, so writers are never stalled long


def reclaim(
    store: Store,
    name: bytes,
    major: bool,
    between_chunks: Callable[[float], bool] | None = None,
) -> bool:
    """Reclaim excess versions and TTL-expired cells; a major compaction also drops markers.

    What a chunk can reclaim is looked for on a reader, without the write lock: a version beyond
    its family's ``max_versions`` or past its TTL stays so (a delete that removes a newer version
    removes it too), so the write transaction only deletes those cells, by key or, in one-version
    families, every version of a column older than its newest at once. Writers, in this process
    or another, wait for those deletes only, never for the scans.

    ``between_chunks(seconds the chunk took)`` runs after each chunk (the background compactor
    paces itself there); when it returns False the compaction stops at once and this returns
    False (what it did not reach waits for the next one).
    """
    info = store.table(name)
    store.compaction_started(info)
    after: bytes | None = None
    reclaimed = 0
    single, other = _compaction_families(info)
    chunk_started = time.monotonic()
    while True:
        if after is not None and between_chunks is not None:
            if not between_chunks(time.monotonic() - chunk_started):
                return False
            chunk_started = time.monotonic()
        rows = _read_applied(
            store,
            info,
            f"SELECT DISTINCT row FROM {info.cells_table}"
            + ("" if after is None else " WHERE row > ?")
            + f" ORDER BY row LIMIT {_CHUNK_ROWS}",
            () if after is None else (after,),
        )
        if not rows:
            break
        low, high = rows[0][0], rows[-1][0]
        after = high
        newest: list = []
        stale: list = []
        if single:
            newest = _read_applied(store, info, *_overwritten_columns(info, single, low, high))
        if other:
            now = now_ms()
            stale = _read_applied(store, info, *_reclaimable_cells(info, other, low, high, now))
        if not newest and not stale:
            continue
        with store.write_transaction() as conn:
            current = store.catalog.cached(name)
            if current is None or current.table_id != info.table_id:
                raise table_not_found(name)
            reclaimed += conn.executemany(
                f"DELETE FROM {info.cells_table} WHERE row = ? AND fam = ? AND qual = ? AND ts < ?",
                newest,
            ).rowcount
            reclaimed += conn.executemany(
                f"DELETE FROM {info.cells_table} WHERE row = ? AND fam = ? AND qual = ? AND ts = ?",
                stale,
            ).rowcount
    store.compaction_ended(info, store.stored_cells(name))  # counted on a reader meanwhile
    if major:
        with store.write_transaction() as conn:
            drop_markers(conn, info)
        store.release_free_pages()
        store.checkpoint()
    if store.on_compacted is not None:
        store.on_compacted(major, reclaimed)
    return True


def _read_applied(store: Store, info: TableInfo, sql: str, params: Sequence[object]) -> list:
    """One statement on a pooled reader, as it is (nothing pending applied first: what a
    compaction misses of a batch not yet applied, the next one reclaims)."""
    try:
        with store.reader() as conn:
            return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):  # dropped meanwhile, by this process or another
            store.catalog.reload()
            raise table_not_found(info.name) from exc
        raise


def _compaction_families(info: TableInfo) -> tuple[list[int], list[int]]:
    """The families keeping one version and no TTL (most tables' every family), whose
    overwritten columns are reclaimed by range, and the others, reclaimed cell by cell."""
    single: list[int] = []
    other: list[int] = []
    for fam, family in enumerate(info.families):
        plain = family.max_versions == 1 and family.ttl_ms is None
        (single if plain else other).append(fam)
    return single, other


def _overwritten_columns(
    info: TableInfo, families: Sequence[int], low: bytes, high: bytes
) -> tuple[str, tuple[bytes, bytes]]:
    """SQL for ``(row, fam, qual, newest ts)`` of the columns of rows ``low..high`` in
    ``families`` (one version kept, no TTL) that hold older versions: every version older than
    the newest is reclaimed with one ranged delete per column. A grouped walk of the range in
    key order, about three times cheaper than numbering every version, and the deletes seek once
    per column instead of once per version. An older version stays unseen: a put of it later
    is beyond the one version kept, and a delete of the newest deletes it too."""
    return (
        f"SELECT row, fam, qual, max(ts) FROM {info.cells_table} "
        f"WHERE row >= ? AND row <= ? AND fam IN ({','.join(str(f) for f in families)}) "
        "GROUP BY row, fam, qual HAVING count(*) > 1",
        (low, high),
    )


def _reclaimable_cells(
    info: TableInfo, families: Sequence[int], low: bytes, high: bytes, now: int
) -> tuple[str, tuple[bytes, bytes]]:
    """SQL for the keys ``(row, fam, qual, ts)`` of rows ``low..high`` in ``families`` that
    reads no longer see: versions beyond their family's ``max_versions``, cells past its TTL.
    One walk of the range in key order (the window needs no sort)."""
    versions = " ".join(f"WHEN {fam} THEN {info.families[fam].max_versions}" for fam in families)
    floors = " ".join(
        f"WHEN {fam} THEN {now - ttl_ms}"
        for fam in families
        if (ttl_ms := info.families[fam].ttl_ms) is not None
    )
    expired = f" OR ts < CASE fam {floors} END" if floors else ""
    return (
        "SELECT row, fam, qual, ts FROM (SELECT row, fam, qual, ts, ROW_NUMBER() OVER "
        "(PARTITION BY row, fam, qual ORDER BY ts DESC) AS n "
        f"FROM {info.cells_table} WHERE row >= ? AND row <= ? "
        f"AND fam IN ({','.join(str(f) for f in families)})) "
        f"WHERE n > CASE fam {versions} END{expired}",
        (low, high),
    )
