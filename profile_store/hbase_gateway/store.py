"""Durable, ordered HBase cell storage on SQLite in WAL mode.

One SQLite file under the data directory holds the catalog and, per HBase table, two
``WITHOUT ROWID`` tables clustered on HBase's key order:

* ``cells_<id>(row, fam, qual, ts, value)``, primary key ``(row, fam, qual, ts DESC)``, so a get
  is one index seek and a scan is one range walk in exactly HBase's cell order;
* ``markers_<id>(row, fam, kind, qual, ts)``: delete markers (``delete_markers.py``).

Every write call is one ``BEGIN IMMEDIATE`` transaction, committed before the call returns (a
large ``mutateRows`` batch is committed to the pending log instead and applied later, see
pending.py; reads and writes apply what is pending first): an acknowledged write is in a WAL
file and survives ``kill -9`` of the process (``synchronous =
NORMAL`` does not fsync each commit, so a power loss can lose the last commits). Reads run on a
pool of autocommit connections, each statement on its own WAL snapshot, so a row read by one
statement is never torn. Several processes may open the same directory: the catalog
(``catalog.py``) carries a generation number that every write transaction checks, and readers
reload on a miss. What a write call changes is planned before anything is written
(``mutation_plans.py``); what reads no longer see, compactions reclaim (``reclaim.py``,
``major_compaction.py``).
"""

from __future__ import annotations

import contextlib
import sqlite3
import struct
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .catalog import CATALOG_DDL, Catalog, CatalogSignal
from .checkpointer import BackgroundCheckpointer
from .data_dir import DB_FILE
from .delete_markers import Delete, apply_deletes, apply_puts
from .errors import (
    GatewayInternalError,
    GatewayIOError,
    retries_exhausted,
    show_bytes,
    table_not_found,
)
from .mutation_plans import (
    Mutation,
    check_batch_shape,
    check_timestamp_shape,
    plan_batch_writes,
    plan_mutations,
    write_timestamp,
)
from .pending import PendingLog, decode_batch, truncate_wal
from .reclaim import reclaim
from .schema import (
    LATEST_TIMESTAMP,
    ColumnSelection,
    FamilyDescriptor,
    StoredCell,
    TableInfo,
    check_client_row_key,
    check_row_key,
    now_ms,
    parse_column,
    sorted_families,
    validate_table_name,
)
from .store_format import FORMAT_DDL, StoreFormatError, check_format
from .store_lock import hold_shared, release
from .visible_cells import RowCells, finish_cells, group_rows

Bound = tuple[bytes, bool]
"""A scan boundary: ``(row key, inclusive)``."""

_I64 = struct.Struct(">q")
_IN_CHUNK = 500  # row keys per ``IN (...)`` lookup
# The writer checkpoints by itself only past this many WAL pages (SQLite's default is 1,000),
# i.e. when the background checkpointer could not keep up: the WAL stays bounded.
_WRITER_AUTOCHECKPOINT_PAGES = 10_000
# A mutateRows batch of at least this many mutations is acknowledged once it is in the pending
# log (see pending.py); smaller ones cost less written directly.
DEFERRED_BATCH_MUTATIONS = 1_000
_MAX_PENDING_BATCHES = 4  # past this backlog a deferring call applies the backlog first


def to_i64(value: int) -> int:
    """Wrap to a signed 64-bit integer, as Java's ``long`` arithmetic does."""
    return (value + 2**63) % 2**64 - 2**63


class TableWrite:
    """Cells put and deleted in one of the store's write transactions, as HBase applies a put
    (masked by later delete markers) and a column or family delete (removing the versions it
    covers and leaving a marker)."""

    def __init__(self, conn: sqlite3.Connection, info: TableInfo) -> None:
        self.conn = conn
        self.info = info
        self.cells = 0

    def put(self, cells: list[StoredCell]) -> None:
        apply_puts(self.conn, self.info, cells)
        self.cells += len(cells)

    def delete(self, deletes: list[Delete]) -> None:
        apply_deletes(self.conn, self.info, deletes)
        self.cells += len(deletes)


class Store:
    """The gateway's storage engine; thread-safe, one instance per process and data dir."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        busy_timeout_ms: int = 60_000,
        catalog_signal: CatalogSignal | None = None,
        deferred_batch_mutations: int = DEFERRED_BATCH_MUTATIONS,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        """``clock``: the server clock (ms) that writes without a timestamp are stamped with;
        the tests fix it to put writes in one millisecond."""
        self.data_dir = Path(data_dir)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.data_dir / DB_FILE
        self._busy_timeout_ms = busy_timeout_ms
        self._write_lock = threading.RLock()
        self._readers: list[sqlite3.Connection] = []
        self._all_connections: list[sqlite3.Connection] = []
        self._connections_lock = threading.Lock()
        self.catalog = Catalog(self.reader, catalog_signal)
        self._closed = False
        self._deferred_batch_mutations = deferred_batch_mutations
        self._clock = clock
        self.on_compacted: Callable[[bool, int], None] | None = None
        """Called after each compaction with ``(major, cell versions reclaimed)``: metrics."""
        self._lock_fd = hold_shared(self.data_dir)  # a restore cannot replace it under us
        self._writer = self._connect()
        try:
            check_format(self._writer, self.path)  # before anything of the store is written
        except StoreFormatError:
            self._writer.close()
            release(self._lock_fd)
            raise
        self._pending = PendingLog(self.data_dir, busy_timeout_ms)
        self._writer.execute("PRAGMA auto_vacuum = INCREMENTAL")  # only effective on a new file
        self._writer.execute("PRAGMA journal_mode = WAL")
        self._writer.execute(f"PRAGMA wal_autocheckpoint = {_WRITER_AUTOCHECKPOINT_PAGES}")
        with self._write_lock:
            self._writer.executescript("BEGIN IMMEDIATE;" + CATALOG_DDL + FORMAT_DDL + "COMMIT;")
            self.catalog.load(self._writer)
            self._pending.recover(self._meta("applied_seq"))
        self._checkpointer = BackgroundCheckpointer(self._connect())

    # -- connections ---------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, isolation_level=None, check_same_thread=False, cached_statements=512
        )
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA secure_delete = OFF")  # see purge(): VACUUM clears deleted bytes
        conn.execute("PRAGMA cache_size = -16384")  # KiB; reads mostly go through mmap
        # Address space, not memory: the first GiB of the file is read through the page cache
        # without copies (a live table of a few hundred MB read past a 256 MB map: 12 % slower)
        conn.execute("PRAGMA mmap_size = 1073741824")
        with self._connections_lock:
            self._all_connections.append(conn)
        return conn

    def _query(
        self,
        info: TableInfo,
        sql: str,
        params: Sequence[object],
        rows: Sequence[bytes] | None = None,
    ) -> list[StoredCell]:
        """Run one read statement on a pooled connection (one WAL snapshot) once it would see
        every acknowledged write: after what is pending, or, for a read of ``rows`` only, after
        what is pending for them."""
        if self._pending.behind() and (rows is None or self._pending.touches(info.table_id, rows)):
            self.apply_pending()
        try:
            conn = self._readers.pop()
        except IndexError:
            conn = self._connect()
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # dropped by another process since we cached it
                self.catalog.reload()
                raise table_not_found(info.name) from exc
            raise
        finally:
            self._readers.append(conn)

    @contextlib.contextmanager
    def write_transaction(self) -> Iterator[sqlite3.Connection]:
        """One serialized write transaction, with a catalog that is current inside it, after
        every batch acknowledged before it (applied first, in the same transaction)."""
        with self._transaction(stamped=False) as (conn, _):
            yield conn

    @contextlib.contextmanager
    def _stamped_write(self) -> Iterator[tuple[sqlite3.Connection, int]]:
        """``write_transaction`` with the server clock read once for it, for the writes it stamps.

        Read before anything pending is looked for, or else in the pending log's lock, after
        the batches applied first read theirs (``PendingLog.settled``): timestamps then follow
        the order in which writes reach the cells, across processes, as HBase's row locks make
        them follow the order of its writes.
        """
        with self._transaction(stamped=True) as stamped:
            yield stamped

    @contextlib.contextmanager
    def _transaction(self, stamped: bool) -> Iterator[tuple[sqlite3.Connection, int]]:
        with self._write_lock:
            if self._closed:
                raise GatewayIOError("IOException: the gateway store is closed")
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                self.catalog.current_in(conn)
                now = self._clock() if stamped else 0
                applied = None
                if self._pending.behind():
                    applied, settled_ms = self._apply_pending_batches(conn, stamped)
                    if settled_ms is not None:
                        now = settled_ms
                yield conn, now
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            if applied is not None:
                self._pending.publish_applied(applied)
            self._checkpointer.due()

    def pending_behind(self) -> bool:
        """Whether an acknowledged batch may still wait in the pending log."""
        return self._pending.behind()

    def apply_pending(self) -> None:
        """Move every acknowledged batch from the pending log into the cells tables."""
        with self.write_transaction():
            pass

    def _apply_pending_batches(
        self, conn: sqlite3.Connection, stamped: bool
    ) -> tuple[int, int | None]:
        """Apply the pending batches past the store's ``applied_seq``, in order; returns the
        new ``applied_seq`` and, when ``stamped``, the server clock as read once every batch
        being appended was committed (``PendingLog.settled``). A batch of a table deleted since
        went with its table."""
        (applied,) = conn.execute("SELECT value FROM meta WHERE key = 'applied_seq'").fetchone()
        if stamped:
            batches, now = self._pending.settled(applied, self._clock)
        else:
            batches, now = self._pending.after(applied), None
        if not batches:
            return applied, now
        tables = self.catalog.by_id()
        for seq, table_id, payload in batches:
            info = tables.get(table_id)
            if info is not None:
                puts, deletes = decode_batch(payload)
                apply_puts(conn, info, puts)
                apply_deletes(conn, info, deletes)
                self._count_written(conn, info, len(puts) + len(deletes))
            applied = seq
        conn.execute("UPDATE meta SET value = ? WHERE key = 'applied_seq'", (applied,))
        return applied, now

    def checkpoint(self, attempts: int = 50) -> bool:
        """Copy the whole WAL into the database file and truncate it; False if another process
        kept it busy (a checkpoint of its own, a reader on an old snapshot) for ``attempts``
        tries 20 ms apart (about a second by default).
        """
        with self._write_lock, self._checkpointer.lock:
            return truncate_wal(self._writer, attempts)

    def drop_applied_batches(self, attempts: int) -> bool:
        """Apply what is pending, then rebuild the pending log without its applied batches
        (``PendingLog.purge_applied``); False if its WAL stayed busy for ``attempts`` tries."""
        self.apply_pending()
        return self._pending.purge_applied(attempts)

    def vacuum(self) -> None:
        """Rebuild the database file from its live rows (``VACUUM``, see ``major_compaction``);
        writers of every table wait while it runs."""
        with self._write_lock:
            # A bulk load sets temp_store=MEMORY on this connection; VACUUM's copy of the whole
            # store belongs in a file.
            self._writer.execute("PRAGMA temp_store = FILE")
            self._writer.execute("VACUUM")

    def release_free_pages(self) -> None:
        """Give the pages deletes freed back to the file system (``PRAGMA incremental_vacuum``,
        to completion)."""
        with self._write_lock:
            self._writer.executescript("PRAGMA incremental_vacuum;")

    def close(self) -> None:
        """Checkpoint the WAL into the database file and close every connection."""
        with self._write_lock:
            if self._closed:
                return
            with contextlib.suppress(sqlite3.Error, GatewayIOError):
                self.apply_pending()  # a store closed gracefully holds everything it acknowledged
            self._closed = True
            self._checkpointer.stop()
            with contextlib.suppress(sqlite3.Error):
                self.checkpoint()
            with self._connections_lock:
                for conn in self._all_connections:
                    conn.close()
                self._all_connections.clear()
            self._readers.clear()
            self._pending.close()
            release(self._lock_fd)

    @contextlib.contextmanager
    def reader(self) -> Iterator[sqlite3.Connection]:
        """A pooled read connection (``_query`` inlines this: it is the hot path)."""
        try:
            conn = self._readers.pop()
        except IndexError:
            conn = self._connect()
        try:
            yield conn
        finally:
            self._readers.append(conn)

    def table(self, name: bytes) -> TableInfo:
        """The catalog entry for ``name`` (enabled or not); TableNotFound if it does not exist."""
        return self.catalog.table(name)

    def readable(self, name: bytes) -> TableInfo:
        return self.catalog.readable(name)

    # -- admin ---------------------------------------------------------------------------------

    def table_names(self) -> list[bytes]:
        return self.catalog.names()

    def create_table(self, name: bytes, families: Sequence[FamilyDescriptor]) -> TableInfo:
        validate_table_name(name)
        if not families:
            raise GatewayIOError(
                "DoNotRetryIOException: Table should have at least one column family."
            )
        ordered = sorted_families(families)
        with self.write_transaction() as conn:
            return self.catalog.create(conn, name, ordered, now_ms())

    def delete_table(self, name: bytes) -> None:
        with self.write_transaction() as conn:
            self.catalog.drop(conn, name)
        self.release_free_pages()

    def set_enabled(self, name: bytes, enabled: bool) -> None:
        """Enable or disable; like HBase, repeating the current state is an error."""
        with self.write_transaction() as conn:
            self.catalog.set_enabled(conn, name, enabled)

    def written_since_compaction(self, name: bytes) -> int:
        """Cells put or deleted in ``name`` since its last compaction (kept across restarts:
        an embedded gateway may live for one run only)."""
        return self._meta(f"written:{self.table(name).table_id}")

    def stored_after_compaction(self, name: bytes) -> int:
        """The cells ``name`` stored when its last compaction ended (0: never compacted)."""
        return self._meta(f"stored_after:{self.table(name).table_id}")

    def _count_written(self, conn: sqlite3.Connection, info: TableInfo, cells: int) -> None:
        _add_meta(conn, f"written:{info.table_id}", cells)

    def _meta(self, key: str) -> int:
        with self._write_lock:
            return _read_meta(self._writer, key)

    def stored_cells(self, name: bytes) -> int:
        """Every cell version the table holds, visible or not (what compaction reclaims)."""
        info = self.table(name)
        counted = self._query(info, f"SELECT count(*) FROM {info.cells_table}", ())[0]
        return int(counted[0])

    def compaction_started(self, info: TableInfo) -> None:
        """Count ``info``'s writes from zero again (``written_since_compaction``)."""
        with self.write_transaction() as conn:
            conn.execute("DELETE FROM meta WHERE key = ?", (f"written:{info.table_id}",))

    def compaction_ended(self, info: TableInfo, stored: int) -> None:
        """Remember the cells ``info`` stored after its compaction (``stored_after_compaction``).

        Cells written while the pass ran are not the compacted size: they already count toward
        the next compaction, and a rewrite among them leaves a stale version the pass may have
        gone by. Counted in the compacted size too, they raised the next threshold past what the
        rest of the burst wrote, and the store stayed at 1.7 times its live cells for good.
        """
        with self.write_transaction() as conn:
            written_meanwhile = _read_meta(conn, f"written:{info.table_id}")
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                (f"stored_after:{info.table_id}", max(0, stored - written_meanwhile)),
            )

    def compact(
        self,
        name: bytes,
        major: bool,
        between_chunks: Callable[[float], bool] | None = None,
    ) -> bool:
        """Reclaim excess versions and TTL-expired cells; a major compaction also drops markers
        (``reclaim.py``). False if ``between_chunks`` stopped it."""
        return reclaim(self, name, major, between_chunks)

    # -- reads ---------------------------------------------------------------------------------

    def get_rows(
        self,
        name: bytes,
        rows: Sequence[bytes],
        columns: Sequence[bytes] | None,
        before_ts: int | None = None,
        versions: int = 1,
    ) -> list[RowCells]:
        """Rows in request order (duplicates kept); rows without visible cells are omitted.

        An empty or oversized row key is an internal error, as HBase's ``new Get(row)`` throws
        outside its handler's ``catch``.
        """
        info = self.readable(name)
        for row in rows:
            check_client_row_key(row)
        selection = info.select(columns)
        where, params = _filters(selection, before_ts)
        floors = info.ttl_floors(now_ms())
        limits = info.version_limits(versions)
        if versions == 1:
            # The newest version of each column only, picked by SQLite (a bare column beside
            # max() comes from the row holding the max): the versions a compaction has not yet
            # reclaimed never reach Python. A TTL drops older versions first, so it is applied
            # to the newest alone, as before.
            base = f"SELECT row, fam, qual, max(ts), value FROM {info.cells_table} WHERE "
            order = " GROUP BY row, fam, qual ORDER BY row, fam, qual"  # the key's order
        else:
            base = f"SELECT row, fam, qual, ts, value FROM {info.cells_table} WHERE "
            order = " ORDER BY row, fam, qual, ts DESC"
        if len(rows) == 1:
            cells = self._query(
                info,
                f"{base}row = ?{where}{order}",
                [rows[0], *params],
                rows,
            )
            kept = finish_cells(cells, floors, limits)
            return [(rows[0], kept)] if kept else []
        found: dict[bytes, list[StoredCell]] = {}
        unique = list(dict.fromkeys(rows))
        for start in range(0, len(unique), _IN_CHUNK):
            chunk = unique[start : start + _IN_CHUNK]
            cells = self._query(
                info,
                f"{base}row IN ({','.join('?' * len(chunk))}){where}{order}",
                [*chunk, *params],
                chunk,
            )
            for row, row_cells in group_rows(cells):
                kept = finish_cells(row_cells, floors, limits)
                if kept:
                    found[row] = kept
        return [(row, found[row]) for row in rows if row in found]

    def read_range(
        self,
        info: TableInfo,
        lower: Bound | None,
        upper: Bound | None,
        *,
        reverse: bool,
        selection: ColumnSelection | None,
        before_ts: int | None,
        max_cells: int,
    ) -> tuple[list[RowCells], Bound | None]:
        """Read whole rows of a key range in scan order, about ``max_cells`` cells at a time.

        Returns the rows (all stored versions, TTL not yet applied) and the bound to continue
        from (it replaces ``lower`` for forward scans, ``upper`` for reverse scans), or None when
        the range is exhausted. A row is never split across calls: each row comes from a single
        statement, hence from a single snapshot.
        """
        cells, bound = self.read_range_cells(
            info,
            lower,
            upper,
            reverse=reverse,
            selection=selection,
            before_ts=before_ts,
            max_cells=max_cells,
        )
        return group_rows(cells, reverse), bound

    def read_range_cells(
        self,
        info: TableInfo,
        lower: Bound | None,
        upper: Bound | None,
        *,
        reverse: bool,
        selection: ColumnSelection | None,
        before_ts: int | None,
        max_cells: int,
    ) -> tuple[list[StoredCell], Bound | None]:
        """``read_range`` without grouping: the whole rows' cells as one flat list, in the order
        the scan walks them (reverse scans: every key descending, timestamps ascending).

        The common scan encodes rows straight from this list, sparing a list per row.
        """
        clauses: list[str] = []
        params: list[object] = []
        if lower is not None:
            clauses.append("row >= ?" if lower[1] else "row > ?")
            params.append(lower[0])
        if upper is not None:
            clauses.append("row <= ?" if upper[1] else "row < ?")
            params.append(upper[0])
        where, extra = _filters(selection, before_ts)
        params.extend(extra)
        order = "row DESC, fam DESC, qual DESC, ts" if reverse else "row, fam, qual, ts DESC"
        sql = (
            f"SELECT row, fam, qual, ts, value FROM {info.cells_table} WHERE "
            f"{' AND '.join(clauses) or '1'}{where} ORDER BY {order} LIMIT {int(max_cells)}"
        )
        cells = self._query(info, sql, params)
        if len(cells) < max_cells:
            return cells, None
        last = cells[-1][0]
        cut = len(cells) - 1
        while cut > 0 and cells[cut - 1][0] == last:
            cut -= 1
        if cut > 0:  # drop the possibly incomplete last row; the next call starts with it
            del cells[cut:]
            return cells, (last, True)
        whole = self._query(
            info,
            f"SELECT row, fam, qual, ts, value FROM {info.cells_table} WHERE row = ?{where} "
            f"ORDER BY {order}",
            [last, *extra],
        )
        return whole, (last, False)

    def row_or_before(self, name: bytes, row: bytes, family: bytes) -> list[StoredCell]:
        """Newest cells of ``family`` in the last row at or before ``row`` (getRowOrBefore)."""
        info = self.readable(name)
        selection = info.select([family])
        floors = info.ttl_floors(now_ms())
        limits = info.version_limits(1)
        upper: Bound | None = (row, True)
        while upper is not None:
            rows, upper = self.read_range(
                info,
                None,
                upper,
                reverse=True,
                selection=selection,
                before_ts=None,
                max_cells=256,
            )
            for _, cells in rows:
                kept = finish_cells(cells, floors, limits)
                if kept:
                    return kept
        return []

    # -- writes --------------------------------------------------------------------------------

    def mutate_rows(
        self,
        name: bytes,
        batches: Sequence[tuple[bytes, Sequence[Mutation]]],
        timestamp: int | None = None,
        *,
        deletes_first: bool = False,
    ) -> None:
        """Apply a batch atomically: all puts, then all deletes (mutateRows), or the reverse.

        Without a timestamp, puts and deletes use the server clock in milliseconds; a delete
        covers every version at or before its timestamp.
        """
        with self._stamped_write() as (conn, now):
            ts = write_timestamp(timestamp, now)
            info = self.catalog.writable(name)
            puts, deletes = plan_mutations(info, batches, ts)
            if deletes_first:
                apply_deletes(conn, info, deletes)
                apply_puts(conn, info, puts)
            else:
                apply_puts(conn, info, puts)
                apply_deletes(conn, info, deletes)
            self._count_written(conn, info, len(puts) + len(deletes))

    def mutate_batch(
        self,
        name: bytes,
        batches: Sequence[tuple[bytes, Sequence[Mutation]]],
        timestamp: int | None = None,
    ) -> None:
        """``mutateRows`` as HBase's Thrift handler does it: ``Table.put(puts)``, then
        ``Table.delete(deletes)``, each row on its own.

        A malformed batch (empty or oversized row key, a put without a qualifier, a negative
        timestamp) fails before anything is written, as an internal error. A row naming a family
        the table lacks fails alone: the other rows are written and the call then reports
        ``RetriesExhaustedWithDetailsException``; when puts failed, the deletes are not applied.
        """
        check_timestamp_shape(timestamp)
        if 0 < self._deferred_batch_mutations <= sum(len(mutations) for _, mutations in batches):
            failed = self._defer_batch(name, batches, timestamp)
        else:
            with self._stamped_write() as (conn, now):
                info = self._batch_table(name, batches)
                ts = write_timestamp(timestamp, now)
                puts, deletes, failed = plan_batch_writes(info, batches, ts)
                apply_puts(conn, info, puts)
                apply_deletes(conn, info, deletes)
                self._count_written(conn, info, len(puts) + len(deletes))
        if failed:
            raise retries_exhausted(len(failed), failed[0])

    def _defer_batch(
        self,
        name: bytes,
        batches: Sequence[tuple[bytes, Sequence[Mutation]]],
        timestamp: int | None,
    ) -> list[str]:
        """``mutate_batch``'s large batches: planned here, applied later (see pending.py)."""
        if self._closed:
            raise GatewayIOError("IOException: the gateway store is closed")
        if self._pending.enqueued - self._pending.applied >= _MAX_PENDING_BATCHES:
            self.apply_pending()  # the applier is behind (or absent): keep the log bounded
        self.catalog.refresh()
        with self._pending.appending() as append:
            info = self._batch_table(name, batches)
            ts = write_timestamp(timestamp, self._clock())  # in the log's lock, see pending.py
            puts, deletes, failed = plan_batch_writes(info, batches, ts)
            if puts or deletes:
                append(info.table_id, (puts, deletes))
        return failed

    def _batch_table(
        self, name: bytes, batches: Sequence[tuple[bytes, Sequence[Mutation]]]
    ) -> TableInfo:
        """The table a batch writes to; a missing or disabled one fails every row of it."""
        try:
            return self.catalog.writable(name)
        except GatewayIOError as exc:
            check_batch_shape(batches)  # a malformed batch is reported first
            rows = sum(1 for _, mutations in batches if mutations)
            cause = show_bytes(name) if self.catalog.cached(name) is None else exc.message
            raise retries_exhausted(rows, cause) from exc

    @contextlib.contextmanager
    def table_write(self, name: bytes) -> Iterator[TableWrite]:
        """One write transaction on table ``name`` for a writer outside the Thrift handler (a
        bulk load, ``bulk_load.py``): after every acknowledged batch, committed on exit."""
        with self.write_transaction() as conn:
            write = TableWrite(conn, self.catalog.writable(name))
            yield write
            self._count_written(conn, write.info, write.cells)

    def delete_row(self, name: bytes, row: bytes, timestamp: int | None = None) -> None:
        """Delete every family of ``row`` at or before ``timestamp`` (deleteAllRow[Ts])."""
        with self._stamped_write() as (conn, now):
            ts = write_timestamp(timestamp, now)
            info = self.catalog.writable(name)
            apply_deletes(conn, info, [(row, fam, None, ts) for fam in info.family_index.values()])

    def increment(self, increments: Sequence[tuple[bytes, bytes, bytes, int]]) -> list[int]:
        """Atomically add to 8-byte big-endian counters; a missing counter counts as 0.

        ``increments`` are ``(table, row, column, amount)``; a bare family names its empty
        qualifier, as HBase's atomicIncrement does. All are applied in one transaction, in one
        millisecond: each writes at the later of the clock and its cell's newest version + 1.
        """
        with self._stamped_write() as (conn, now):
            results: list[int] = []
            for name, row, column, amount in increments:
                info = self.catalog.writable(name)
                check_row_key(row)
                family, qualifier = parse_column(column)
                fam = info.family_id(family)
                qual = qualifier or b""
                current = self._latest(conn, info, row, fam, qual, now)
                if current is None:
                    value, ts = to_i64(amount), now
                else:
                    old_ts, old_value = current
                    if len(old_value) != 8:
                        raise GatewayIOError(
                            "DoNotRetryIOException: Field is not a long, it's "
                            f"{len(old_value)} bytes wide"
                        )
                    value = to_i64(_I64.unpack(old_value)[0] + amount)
                    ts = max(now, old_ts + 1)
                apply_puts(conn, info, [(row, fam, qual, ts, _I64.pack(value))])
                results.append(value)
            return results

    def append(
        self, name: bytes, row: bytes, pairs: Sequence[tuple[bytes, bytes]]
    ) -> list[StoredCell]:
        """Append bytes to cells (missing cells start empty); returns the new cells."""
        with self._stamped_write() as (conn, now):
            info = self.catalog.writable(name)
            check_row_key(row)
            written: dict[tuple[int, bytes], StoredCell] = {}
            for column, value in pairs:
                family, qualifier = parse_column(column)
                fam = info.family_id(family)
                qual = qualifier or b""
                current = self._latest(conn, info, row, fam, qual, now)
                if current is None:
                    cell = (row, fam, qual, now, value)
                else:
                    cell = (row, fam, qual, max(now, current[0] + 1), current[1] + value)
                apply_puts(conn, info, [cell])
                written[(fam, qual)] = cell
            return [written[key] for key in sorted(written)]

    def check_and_put(
        self,
        name: bytes,
        row: bytes,
        column: bytes,
        expected: bytes | None,
        put_column: bytes,
        put_value: bytes,
    ) -> bool:
        """Put one cell if ``column``'s newest value equals ``expected`` (None: is absent).

        As in HBase, an empty ``expected`` also matches a missing cell; a column without a
        qualifier fails as an internal error.
        """
        family, qualifier = parse_column(column)
        put_family, put_qualifier = parse_column(put_column)
        if qualifier is None or put_qualifier is None:  # HBase indexes famAndQf[1]
            raise GatewayInternalError("ArrayIndexOutOfBoundsException: Index 1 out of bounds")
        check_row_key(row)
        with self._stamped_write() as (conn, now):
            info = self.catalog.writable(name)
            fam, put_fam = info.family_id(family), info.family_id(put_family)
            current = self._latest(conn, info, row, fam, qualifier, now)
            if expected is None or expected == b"":
                matches = current is None or (expected == b"" and current[1] == b"")
            else:
                matches = current is not None and current[1] == expected
            if matches:
                apply_puts(conn, info, [(row, put_fam, put_qualifier, now, put_value)])
            return matches

    def _latest(
        self, conn: sqlite3.Connection, info: TableInfo, row: bytes, fam: int, qual: bytes, now: int
    ) -> tuple[int, bytes] | None:
        """Newest live ``(timestamp, value)`` of one column, read inside the write transaction
        as HBase's increments, appends and checkAndPut read it: naming the column, so past a
        cell at Long.MAX_VALUE (see ``ColumnSelection``)."""
        found = conn.execute(
            f"SELECT ts, value FROM {info.cells_table} "
            f"WHERE row = ? AND fam = ? AND qual = ? AND ts < {LATEST_TIMESTAMP} "
            "ORDER BY ts DESC LIMIT 1",
            (row, fam, qual),
        ).fetchone()
        if found is None:
            return None
        ttl_ms = info.families[fam].ttl_ms
        if ttl_ms is not None and found[0] < now - ttl_ms:
            return None
        return found


def _read_meta(conn: sqlite3.Connection, key: str) -> int:
    found = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return found[0] if found else 0


def _add_meta(conn: sqlite3.Connection, key: str, amount: int) -> None:
    conn.execute(
        "INSERT INTO meta VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = value + excluded.value",
        (key, amount),
    )


def _filters(selection: ColumnSelection | None, before_ts: int | None) -> tuple[str, list[object]]:
    """SQL for a column selection and a time range ``[0, before_ts)``."""
    where, params = ("", []) if selection is None else selection.sql()
    if before_ts is not None and before_ts != LATEST_TIMESTAMP:
        where += " AND ts < ?"
        params.append(before_ts)
    return where, params
