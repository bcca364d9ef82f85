"""The files of a gateway's data directory, named here for the processes that look at a data
directory without opening its store (a command checking that the store exists, the metrics
endpoint), so that they do not load the store's code to learn a file name."""

from __future__ import annotations

DB_FILE = "hbase.sqlite3"
"""The cells tables and the catalog (SQLite, WAL mode)."""

LOG_FILE = "pending.sqlite3"
"""Acknowledged batches not yet applied to the cells tables (``pending.PendingLog``)."""

COUNTERS_FILE = "pending.counters"
"""Two int64, batches enqueued and applied, as the store's processes last published them."""

LOCK_FILE = "store.lock"
"""Locked shared by every process with the store open, exclusively by a restore (``store_lock``)."""
