"""Acknowledged ``mutateRows`` batches waiting to be applied to the cells tables.

HBase acknowledges a put once it is in its write-ahead log and memstore and sorts it into its
files later. Inserting a bulk load's cells into SQLite's B-trees while the client waited made
the gateway the slower writer, so a large batch is planned by the call (validated, timestamped),
committed here as one row, and acknowledged; an applier (a thread of the gateway, or its
upkeep process) then moves it into the cells tables, in order, in one transaction with the
store's ``applied_seq``. The client builds its next batch meanwhile.

Nothing acknowledged is ever invisible: every scan and every other write first applies what is
pending (``Store._write`` drains), and so does a get of a row a pending batch writes (a get of
other rows need not wait, as in HBase, where a read waits only for its own rows). Two counters
in a small memory-mapped file of the data directory, shared by every process that opens it,
make "nothing pending" a comparison of two integers:

* ``enqueued``: the highest sequence number handed out, published when the appending
  transaction starts (before the batch reads the clock) and taken back if it appends nothing.
  A commit that then fails leaves a number nobody holds, which costs each read a drain that
  finds nothing, until the next batch.
* ``applied``: at most what the cells tables hold (published after the applying commit, never
  before); the durable value is the store's ``applied_seq``.

The log is its own SQLite file, so appending never waits for a long apply transaction.

A batch reads the server clock for its timestamp inside the log's write lock, and a write that
finds a batch pending reads its own there too (``settled``): so the order in which batches and
other writes reach the cells tables is the order of their timestamps, across every process, as
HBase's row locks make it (a put applied after an increment never carries an older clock
reading than the increment's).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import mmap
import os
import pickle
import sqlite3
import struct
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from .data_dir import COUNTERS_FILE, LOG_FILE
from .schema import StoredCell

POLL_S = 0.005  # how often an idle applier looks at the counters (a few microseconds each)

logger = logging.getLogger(__name__)

PlannedBatch = tuple[list[StoredCell], list[tuple[bytes, int, bytes | None, int]]]
"""``(puts, deletes)`` of one batch, as the store plans them; puts are applied first."""


LOG_DDL = (
    "CREATE TABLE IF NOT EXISTS pending (seq INTEGER PRIMARY KEY, "
    "table_id INTEGER NOT NULL, payload BLOB NOT NULL);"
    # The rows each batch writes: a get of other rows need not wait for it.
    "CREATE TABLE IF NOT EXISTS pending_rows (table_id INTEGER NOT NULL, "
    "row BLOB NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (table_id, row, seq)) "
    "WITHOUT ROWID;"
)


def encode_batch(batch: PlannedBatch) -> bytes:
    return pickle.dumps(batch, protocol=5)


def decode_batch(payload: bytes) -> PlannedBatch:
    return pickle.loads(payload)


class PendingLog:
    """The durable queue of planned batches and its two shared counters; thread-safe."""

    def __init__(self, data_dir: Path, busy_timeout_ms: int) -> None:
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(
            data_dir / LOG_FILE, isolation_level=None, check_same_thread=False
        )
        self._conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("PRAGMA synchronous = NORMAL")
        # Deleted batches are not zeroed as they go (Debian's SQLite would by default): the log
        # drops applied batches at every append, and a major compaction's purge rebuilds it.
        self._conn.execute("PRAGMA secure_delete = OFF")
        self._conn.executescript(LOG_DDL)
        fd = os.open(data_dir / COUNTERS_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if os.fstat(fd).st_size < 16:
                os.ftruncate(fd, 16)
            self._map = mmap.mmap(fd, 16)
        finally:
            os.close(fd)
        # Aligned 8-byte loads and stores: a value is never seen half-written.
        self._enqueued = ctypes.c_int64.from_buffer(self._map, 0)
        self._applied = ctypes.c_int64.from_buffer(self._map, 8)

    @property
    def enqueued(self) -> int:
        return self._enqueued.value

    @property
    def applied(self) -> int:
        return self._applied.value

    def behind(self) -> bool:
        """Whether a batch may be acknowledged but not yet applied."""
        return self._enqueued.value > self._applied.value

    @contextlib.contextmanager
    def appending(self) -> Iterator[Callable[[int, PlannedBatch], int]]:
        """One serialized append transaction; yields ``append(table_id, batch) -> seq``.

        Rows already applied are dropped in the same transaction, so the log stays small
        without a transaction of its own.
        """
        with self._lock:
            published = self._enqueued.value
            seq = first = 0
            try:
                with self._immediate() as conn:
                    applied = self._drop_applied(conn)
                    (last,) = conn.execute("SELECT coalesce(max(seq), 0) FROM pending").fetchone()
                    seq = first = max(last, applied, published)
                    # Announced before the caller reads the clock: a write that then finds
                    # nothing pending has read its own timestamp before this batch reads one.
                    self._enqueued.value = seq + 1

                    def append(table_id: int, batch: PlannedBatch) -> int:
                        nonlocal seq
                        seq += 1
                        conn.execute(
                            "INSERT INTO pending VALUES (?, ?, ?)",
                            (seq, table_id, encode_batch(batch)),
                        )
                        puts, deletes = batch
                        rows = dict.fromkeys(cell[0] for cell in puts)
                        rows.update(dict.fromkeys(delete[0] for delete in deletes))
                        conn.executemany(
                            "INSERT OR IGNORE INTO pending_rows VALUES (?, ?, ?)",
                            [(table_id, row, seq) for row in rows],
                        )
                        self._enqueued.value = seq  # under the log's write lock
                        return seq

                    yield append
            except BaseException:
                self._enqueued.value = published  # nobody else appends while we hold the lock
                raise
            if seq == first:  # nothing appended
                self._enqueued.value = published

    def purge_applied(self, attempts: int = 1500) -> bool:
        """Delete every applied batch, rebuild the log's file from what is left (``VACUUM``:
        deleted batches leave no byte in its pages) and truncate its WAL, so that no copy of a
        batch the cells tables already hold stays in the log's files (a major compaction's
        purge). False if another process kept the WAL busy for ``attempts`` tries 20 ms apart."""
        with self._lock:
            with self._immediate() as conn:
                self._drop_applied(conn)
            self._conn.execute("VACUUM")  # the log holds little now: a quick rebuild
            return truncate_wal(self._conn, attempts)

    @contextlib.contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """One write transaction on the log (the caller holds ``_lock``)."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _drop_applied(self, conn: sqlite3.Connection) -> int:
        """Delete the batches the store has applied; returns the applied sequence number."""
        applied = self._applied.value
        conn.execute("DELETE FROM pending WHERE seq <= ?", (applied,))
        conn.execute("DELETE FROM pending_rows WHERE seq <= ?", (applied,))
        return applied

    def touches(self, table_id: int, rows: Sequence[bytes]) -> bool:
        """Whether a batch not known to be applied writes one of ``rows`` (at most a few
        hundred) of the table."""
        with self._lock:
            return (
                self._conn.execute(
                    "SELECT 1 FROM pending_rows WHERE table_id = ? AND seq > ? "
                    f"AND row IN ({','.join('?' * len(rows))}) LIMIT 1",
                    (table_id, self._applied.value, *rows),
                ).fetchone()
                is not None
            )

    def after(self, seq: int) -> list[tuple[int, int, bytes]]:
        """Committed ``(seq, table_id, payload)`` past ``seq``, oldest first."""
        with self._lock:
            return self._committed_after(seq)

    def settled(
        self, seq: int, clock: Callable[[], int]
    ) -> tuple[list[tuple[int, int, bytes]], int]:
        """``after(seq)`` and a reading of ``clock``, both in the log's write lock: every batch
        returned read its timestamp before that reading, every batch not returned reads its own
        after it."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                return self._committed_after(seq), clock()
            finally:
                self._conn.execute("COMMIT")

    def _committed_after(self, seq: int) -> list[tuple[int, int, bytes]]:
        return self._conn.execute(
            "SELECT seq, table_id, payload FROM pending WHERE seq > ? ORDER BY seq", (seq,)
        ).fetchall()

    def recover(self, applied_seq: int) -> None:
        """Align the counters with the store at open: a new counters file beside an existing
        store, or one left by a crash between a commit and its publication."""
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                (last,) = self._conn.execute("SELECT coalesce(max(seq), 0) FROM pending").fetchone()
                self._enqueued.value = max(self._enqueued.value, last, applied_seq)
                self._applied.value = applied_seq
            finally:
                self._conn.execute("COMMIT")

    def publish_applied(self, seq: int) -> None:
        """Called after the commit that applied through ``seq``. Racing publishers may leave a
        lower value than the newest: that only costs a drain that finds nothing."""
        if seq > self._applied.value:
            self._applied.value = seq

    def close(self) -> None:
        with self._lock:
            del self._enqueued, self._applied
            self._map.close()
            self._conn.close()


def truncate_wal(conn: sqlite3.Connection, attempts: int) -> bool:
    """Copy the WAL into the database file and truncate it to nothing; False if a reader or a
    checkpoint of another connection kept it busy on every attempt (20 ms apart)."""
    for _ in range(attempts):
        (busy, _, _) = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return True
        time.sleep(0.02)
    return False


def read_counters(data_dir: Path) -> tuple[int, int]:
    """``(enqueued, applied)`` as the store's processes last published them, for a process
    that holds no store (the metrics endpoint); ``(0, 0)`` before a store was opened."""
    try:
        with open(data_dir / COUNTERS_FILE, "rb") as counters:
            published = counters.read(16)
    except FileNotFoundError:
        return 0, 0
    if len(published) < 16:
        return 0, 0
    enqueued, applied = struct.unpack("=qq", published)  # two native int64, as mapped above
    return enqueued, applied


class PendingStore(Protocol):
    def pending_behind(self) -> bool: ...

    def apply_pending(self) -> None: ...


class PendingApplier:
    """Applies acknowledged batches in the background, so the client's next call finds the
    store free; on a thread of whichever gateway process does the upkeep."""

    def __init__(self, store: PendingStore, poll_s: float = POLL_S) -> None:
        self.store = store
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hbase-gateway-applier", daemon=True)

    def start(self) -> PendingApplier:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            if not self.store.pending_behind():
                self._stop.wait(self.poll_s)
                continue
            try:
                self.store.apply_pending()
            except Exception:  # the readers apply what is pending themselves meanwhile
                logger.exception("applying pending batches failed; retrying in 1 s")
                self._stop.wait(1.0)
