"""The store's background WAL checkpoints: committed frames copied into the database file on a
thread of their own, not by the committing writer.

With SQLite's default the committing writer checkpoints every 1,000 WAL pages itself, syncing
the WAL and the database file while the client waits. A ``PASSIVE`` checkpoint on another
connection runs alongside readers and writers, mostly while the client prepares its next call;
durability is unchanged (a commit is in the WAL either way).
"""

from __future__ import annotations

import logging
import sqlite3
import threading

_PAUSE_S = 0.2  # at most this often the background checkpointer copies the WAL

logger = logging.getLogger(__name__)


class BackgroundCheckpointer:
    """A daemon thread checkpointing ``conn``'s database after writes (``due``)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.lock = threading.Lock()
        """SQLite runs one checkpoint at a time: a full checkpoint takes this too."""
        self._conn = conn
        self._due = threading.Event()
        self._closing = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="hbase-gateway-checkpointer", daemon=True
        )
        self._thread.start()

    def due(self) -> None:
        """A write committed: checkpoint soon."""
        self._due.set()

    def stop(self) -> None:
        self._closing.set()
        self._due.set()
        self._thread.join()

    def _run(self) -> None:
        while True:
            self._due.wait()
            if self._closing.is_set():
                return
            self._due.clear()
            try:
                with self.lock:
                    self._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except sqlite3.Error:
                logger.exception("background WAL checkpoint failed; the writer's own one remains")
            if self._closing.wait(_PAUSE_S):
                return
