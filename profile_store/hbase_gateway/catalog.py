"""The gateway's catalog: which tables exist, their families, whether each is enabled.

It lives in the store's SQLite file (``hbase_tables``, ``hbase_families``) and is cached per
process. Every change bumps a generation number in the same transaction, so a process that
finds a newer generation (inside a write transaction, or on a miss) reloads its cache; the
worker processes of one gateway also share a ``CatalogSignal``, so that a change made through
one worker is seen by the next read on every other.
"""

from __future__ import annotations

import contextlib
import ctypes
import sqlite3
from collections.abc import Callable, Sequence
from multiprocessing.sharedctypes import RawValue

from .errors import GatewayAlreadyExists, show_bytes, table_disabled, table_enabled, table_not_found
from .schema import FamilyDescriptor, TableInfo

CATALOG_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO meta VALUES ('catalog_generation', 0);
INSERT OR IGNORE INTO meta VALUES ('applied_seq', 0);
CREATE TABLE IF NOT EXISTS hbase_tables (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name BLOB NOT NULL UNIQUE,
    enabled INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS hbase_families (
    table_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    name BLOB NOT NULL,
    max_versions INTEGER NOT NULL,
    time_to_live INTEGER NOT NULL,
    compression TEXT NOT NULL,
    in_memory INTEGER NOT NULL,
    bloom_filter_type TEXT NOT NULL,
    bloom_filter_vector_size INTEGER NOT NULL,
    bloom_filter_nb_hashes INTEGER NOT NULL,
    block_cache_enabled INTEGER NOT NULL,
    PRIMARY KEY (table_id, position)
);
"""


class CatalogSignal:
    """The newest catalog generation committed by any process of one gateway, in shared memory.

    Created before the gateway forks its workers. A writer publishes the generation inside its
    write transaction (writers are serialized by SQLite, so the value only grows); a reader that
    sees a value above its cached catalog's reloads it, so a table created, disabled or deleted
    through one worker is seen by the next call on any other. If the commit then failed, the
    readers reload on every call until the next catalog change: slower, never stale.
    """

    def __init__(self) -> None:
        self._value = RawValue(ctypes.c_int64, -1)

    @property
    def generation(self) -> int:
        return self._value.value

    def publish(self, generation: int) -> None:
        self._value.value = generation


def generation_of(conn: sqlite3.Connection) -> int:
    """The catalog generation committed in the file, as ``conn`` sees it."""
    (generation,) = conn.execute(
        "SELECT value FROM meta WHERE key = 'catalog_generation'"
    ).fetchone()
    return generation


class Catalog:
    """This process's copy of the catalog, and the catalog changes (inside a write transaction).

    ``reader`` lends a read connection of the store, to reload from outside a transaction.
    """

    def __init__(
        self,
        reader: Callable[[], contextlib.AbstractContextManager[sqlite3.Connection]],
        signal: CatalogSignal | None = None,
    ) -> None:
        self._reader = reader
        self._signal = signal
        self._tables: dict[bytes, TableInfo] = {}
        self._generation = -1

    # -- the cache ---------------------------------------------------------------------------

    def load(self, conn: sqlite3.Connection) -> None:
        """Read the whole catalog on ``conn`` (one snapshot)."""
        generation = generation_of(conn)
        families: dict[int, list[FamilyDescriptor]] = {}
        for row in conn.execute(
            "SELECT table_id, name, max_versions, time_to_live, compression, in_memory, "
            "bloom_filter_type, bloom_filter_vector_size, bloom_filter_nb_hashes, "
            "block_cache_enabled FROM hbase_families ORDER BY table_id, position"
        ):
            families.setdefault(row[0], []).append(
                FamilyDescriptor(
                    name=row[1],
                    max_versions=row[2],
                    time_to_live=row[3],
                    compression=row[4],
                    in_memory=bool(row[5]),
                    bloom_filter_type=row[6],
                    bloom_filter_vector_size=row[7],
                    bloom_filter_nb_hashes=row[8],
                    block_cache_enabled=bool(row[9]),
                )
            )
        self._tables = {
            name: TableInfo(
                name=name,
                table_id=table_id,
                enabled=bool(enabled),
                created_ms=created_ms,
                families=tuple(families.get(table_id, ())),
            )
            for table_id, name, enabled, created_ms in conn.execute(
                "SELECT id, name, enabled, created_ms FROM hbase_tables"
            )
        }
        self._generation = generation

    def current_in(self, conn: sqlite3.Connection) -> None:
        """Inside a write transaction: reload if another process changed the catalog."""
        if generation_of(conn) != self._generation:
            self.load(conn)

    def reload(self) -> None:
        with self._reader() as conn:
            conn.execute("BEGIN")
            try:
                self.load(conn)
            finally:
                conn.execute("COMMIT")

    def refresh(self) -> None:
        """Outside a write transaction: reload the catalog if any process has changed it."""
        with self._reader() as conn:
            generation = generation_of(conn)
        if generation != self._generation:
            self.reload()

    def table(self, name: bytes) -> TableInfo:
        """The entry for ``name`` (enabled or not); TableNotFound if it does not exist."""
        if self._signal is not None and self._signal.generation > self._generation:
            self.reload()
        info = self._tables.get(name)
        if info is None:
            self.reload()
            info = self._tables.get(name)
            if info is None:
                raise table_not_found(name)
        return info

    def readable(self, name: bytes) -> TableInfo:
        info = self.table(name)
        if not info.enabled:
            raise table_disabled(name)
        return info

    def writable(self, name: bytes) -> TableInfo:
        """Inside a write transaction the cached catalog is current, so no reload is needed."""
        info = self._tables.get(name)
        if info is None:
            raise table_not_found(name)
        if not info.enabled:
            raise table_disabled(name)
        return info

    def cached(self, name: bytes) -> TableInfo | None:
        """The entry as cached, without reloading (None: not known here)."""
        return self._tables.get(name)

    def names(self) -> list[bytes]:
        self.reload()
        return sorted(self._tables)

    def by_id(self) -> dict[int, TableInfo]:
        return {info.table_id: info for info in self._tables.values()}

    # -- changes, each inside the caller's write transaction ---------------------------------

    def create(
        self, conn: sqlite3.Connection, name: bytes, families: Sequence[FamilyDescriptor], now: int
    ) -> TableInfo:
        """A new enabled table of ``families`` (in HBase's order), with its cell tables."""
        if name in self._tables:
            raise GatewayAlreadyExists(f"table name already in use: {show_bytes(name)}")
        cursor = conn.execute(
            "INSERT INTO hbase_tables (name, enabled, created_ms) VALUES (?, 1, ?)",
            (name, now),
        )
        table_id = cursor.lastrowid
        conn.executemany(
            "INSERT INTO hbase_families VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            [
                (
                    table_id,
                    position,
                    f.name,
                    f.max_versions,
                    f.time_to_live,
                    f.compression,
                    int(f.in_memory),
                    f.bloom_filter_type,
                    f.bloom_filter_vector_size,
                    f.bloom_filter_nb_hashes,
                    int(f.block_cache_enabled),
                )
                for position, f in enumerate(families)
            ],
        )
        conn.execute(
            f"CREATE TABLE cells_{table_id} (row BLOB NOT NULL, fam INTEGER NOT NULL, "
            "qual BLOB NOT NULL, ts INTEGER NOT NULL, value BLOB NOT NULL, "
            "PRIMARY KEY (row, fam, qual, ts DESC)) WITHOUT ROWID"
        )
        conn.execute(
            f"CREATE TABLE markers_{table_id} (row BLOB NOT NULL, fam INTEGER NOT NULL, "
            "kind INTEGER NOT NULL, qual BLOB NOT NULL, ts INTEGER NOT NULL, "
            "PRIMARY KEY (row, fam, kind, qual)) WITHOUT ROWID"
        )
        self._changed(conn)
        return self._tables[name]

    def drop(self, conn: sqlite3.Connection, name: bytes) -> None:
        """Delete a disabled table and its cells."""
        info = self._tables.get(name)
        if info is None:
            raise table_not_found(name)
        if info.enabled:
            raise table_enabled(name)
        conn.execute(f"DROP TABLE {info.cells_table}")
        conn.execute(f"DROP TABLE {info.markers_table}")
        conn.execute("DELETE FROM hbase_families WHERE table_id = ?", (info.table_id,))
        conn.execute("DELETE FROM hbase_tables WHERE id = ?", (info.table_id,))
        self._changed(conn)

    def set_enabled(self, conn: sqlite3.Connection, name: bytes, enabled: bool) -> None:
        """Enable or disable; like HBase, repeating the current state is an error."""
        info = self._tables.get(name)
        if info is None:
            raise table_not_found(name)
        if info.enabled == enabled:
            raise table_enabled(name) if enabled else table_disabled(name)
        conn.execute(
            "UPDATE hbase_tables SET enabled = ? WHERE id = ?", (int(enabled), info.table_id)
        )
        self._changed(conn)

    def _changed(self, conn: sqlite3.Connection) -> None:
        """Bump the generation (last before the commit), publish it, and reload."""
        conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'catalog_generation'")
        if self._signal is not None:
            self._signal.publish(generation_of(conn))
        self.load(conn)
