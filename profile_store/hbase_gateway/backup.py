"""Online backup of a gateway's store into one SQLite file, and its restore into a data directory.

The store is two SQLite files: the cells (``hbase.sqlite3``, with ``applied_seq``, how far the
pending log is applied) and the pending log (``pending.sqlite3``, acknowledged batches not yet
applied). A consistent copy is taken while the gateway serves, from another process, through
SQLite's own locks (its worker processes and upkeep process go on):

1. the pending log's write lock is taken, so no batch is appended or dropped meanwhile (an
   append waits: a few milliseconds);
2. a read transaction on the cells file fixes the copy's point: every write acknowledged before
   it is either in that snapshot or a batch of the frozen log past its ``applied_seq``;
3. those batches are read, and the log's lock released;
4. the snapshot is copied with SQLite's online backup API in one step (its WAL included; the
   writers go on, as a read transaction never blocks them in WAL mode);
5. the batches are applied to the copy by opening it as a store, which is then checkpointed
   into the one file the backup is (a rollback-journal SQLite file: no WAL beside it).

The backup is thus a store as of one moment, with nothing pending: a restore copies it into a
data directory no process holds (``store_lock``), removing the old store's WAL and pending log.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .data_dir import COUNTERS_FILE, DB_FILE, LOG_FILE
from .pending import LOG_DDL
from .store import Store
from .store_format import check_format
from .store_lock import held_exclusively

_BUSY_TIMEOUT_MS = 60_000
_STORE_FILES = (
    f"{DB_FILE}-wal",
    f"{DB_FILE}-shm",
    LOG_FILE,
    f"{LOG_FILE}-wal",
    f"{LOG_FILE}-shm",
    COUNTERS_FILE,
)
"""A data directory's files that belong to the store in ``DB_FILE``: replaced with it."""


class BackupError(RuntimeError):
    """A backup or restore that cannot be done; the message names the path and why."""


@dataclass(frozen=True)
class BackupReport:
    """What a backup holds: batches of the pending log applied to the copy, and its size."""

    path: Path
    applied_batches: int
    size_bytes: int


def backup(data_dir: Path, target: Path) -> BackupReport:
    """Copy the store of ``data_dir`` into the new file ``target`` while gateways serve it."""
    data_dir, target = Path(data_dir), Path(target)
    source = data_dir / DB_FILE
    if not source.is_file():
        raise BackupError(f"{data_dir}: no gateway store here (no {DB_FILE})")
    if target.exists():
        raise BackupError(f"{target}: already exists; a backup never overwrites a file")
    if not target.parent.is_dir():
        raise BackupError(f"{target.parent}: no such directory")
    with tempfile.TemporaryDirectory(prefix=".backup-", dir=target.parent) as work:
        copy_dir = Path(work)
        batches = _snapshot(data_dir, copy_dir)
        Store(copy_dir, busy_timeout_ms=_BUSY_TIMEOUT_MS).close()  # applies them, checkpoints
        copied = copy_dir / DB_FILE
        conn = sqlite3.connect(copied)
        try:  # one self-contained file, readable without a WAL beside it
            conn.execute("PRAGMA journal_mode = DELETE")
        finally:
            conn.close()
        _fsync(copied)
        os.link(copied, target)  # never replaces a file that appeared meanwhile
    _fsync(target.parent)
    return BackupReport(target, len(batches), target.stat().st_size)


def _snapshot(data_dir: Path, copy_dir: Path) -> list[tuple[int, int, bytes]]:
    """Copy the cells file as of one moment into ``copy_dir``, with the pending log's batches
    past its ``applied_seq`` as a pending log there; returns those batches."""
    cells = _connect(data_dir / DB_FILE)
    log = _connect(data_dir / LOG_FILE) if (data_dir / LOG_FILE).exists() else None
    try:
        if log is not None:
            log.execute("BEGIN IMMEDIATE")  # no batch appended or dropped from here
        try:
            cells.execute("BEGIN")
            check_format(cells, data_dir / DB_FILE)  # the first read: the snapshot's moment
            found = cells.execute("SELECT value FROM meta WHERE key = 'applied_seq'").fetchone()
            if found is None:
                raise BackupError(f"{data_dir / DB_FILE}: not a gateway store (no applied_seq)")
            batches = (
                []
                if log is None
                else log.execute(
                    "SELECT seq, table_id, payload FROM pending WHERE seq > ? ORDER BY seq", found
                ).fetchall()
            )
        finally:
            if log is not None:
                log.execute("ROLLBACK")
        copy = sqlite3.connect(copy_dir / DB_FILE)
        try:
            cells.backup(copy)  # one step: the whole snapshot of the open read transaction
        finally:
            copy.close()
        cells.execute("ROLLBACK")
    finally:
        cells.close()
        if log is not None:
            log.close()
    pending = sqlite3.connect(copy_dir / LOG_FILE)
    try:
        pending.executescript(LOG_DDL)
        with pending:
            pending.executemany("INSERT INTO pending VALUES (?, ?, ?)", batches)
    finally:
        pending.close()
    return batches


def restore(source: Path, data_dir: Path, replace: bool = False) -> Path:
    """Copy the backup ``source`` into ``data_dir`` as its store; refuses while any process has
    the store there open, and an existing store unless ``replace``. Returns the store's path."""
    source, data_dir = Path(source), Path(data_dir)
    if not source.is_file():
        raise BackupError(f"{source}: no such file")
    _check_backup(source)
    with held_exclusively(data_dir):
        store = data_dir / DB_FILE
        if store.exists() and not replace:
            raise BackupError(
                f"{data_dir}: already holds a store; pass --replace to overwrite it (what it "
                "holds is lost)"
            )
        incoming = data_dir / f".{DB_FILE}.restoring"
        shutil.copyfile(source, incoming)
        _fsync(incoming)
        for name in _STORE_FILES:  # the old store's WAL must never be replayed into the new one
            with contextlib.suppress(FileNotFoundError):
                (data_dir / name).unlink()
        os.replace(incoming, store)
        _fsync(data_dir)
    return store


def _check_backup(source: Path) -> None:
    """A backup's format must be one this code reads: checked before anything is replaced."""
    try:
        conn = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    except sqlite3.Error as error:
        raise BackupError(f"{source}: not readable as a store ({error})") from None
    try:
        has_meta = conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone()
        if has_meta is None:
            raise BackupError(f"{source}: not a gateway store backup (no catalog)")
        check_format(conn, source)
    except sqlite3.DatabaseError as error:
        raise BackupError(f"{source}: not a gateway store backup ({error})") from None
    finally:
        conn.close()


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
    return conn


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
