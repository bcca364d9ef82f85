"""The store's format version: recorded in the store, checked by every process that opens it.

A gateway must never write into a store whose layout it does not know (a newer release's, or
one restored from a newer release's backup): it would misread its cells or damage them. The
version is a row of the store's ``meta`` table. A store written before versions were recorded
has the layout of version 1, so opening it records 1 (its whole migration). A store of a newer
version is refused, naming the file, both versions and what to do.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

FORMAT_VERSION = 1
"""The layout of the store this code reads and writes: the catalog (``meta``,
``hbase_tables``, ``hbase_families``), per table ``cells_<id>`` and ``markers_<id>``, and the
pending log's ``applied_seq``."""

logger = logging.getLogger(__name__)


class StoreFormatError(RuntimeError):
    """The store's format is not one this code reads; the message says what to do."""


def recorded_version(conn: sqlite3.Connection) -> int | None:
    """The version a store records; None for a new store or one written before versions were
    recorded (no ``meta`` table, or no ``format_version`` row in it)."""
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
        return None
    found = conn.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone()
    return None if found is None else int(found[0])


FORMAT_DDL = f"INSERT OR IGNORE INTO meta VALUES ('format_version', {FORMAT_VERSION});"
"""Run with the catalog's DDL: records the version in a store that has none yet."""


def check_format(conn: sqlite3.Connection, path: Path) -> None:
    """Raise ``StoreFormatError`` unless this code reads the store ``conn`` opened (``path``);
    say so in the log when it is a store written before versions were recorded, which
    ``FORMAT_DDL`` then records."""
    found = recorded_version(conn)
    check_version(found, path)
    if (
        found is None
        and conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'hbase_tables'").fetchone()
    ):
        logger.info(
            "%s: recording format version %d (the store was written before versions were "
            "recorded, with this layout)",
            path,
            FORMAT_VERSION,
        )


def check_version(found: int | None, path: Path) -> None:
    """Raise ``StoreFormatError`` unless this code reads a store of version ``found``."""
    if found is None or 1 <= found <= FORMAT_VERSION:
        return
    if found > FORMAT_VERSION:
        raise StoreFormatError(
            f"{path}: the store's format version is {found}, this gateway supports version "
            f"{FORMAT_VERSION}: it was written by a newer release of profile_store. Run that "
            "release (or a newer one) against it, or restore a backup taken by this release "
            "into another data directory (profiles hbase-gateway restore)."
        )
    raise StoreFormatError(
        f"{path}: the store records format version {found}, which no release wrote (this "
        f"gateway supports version {FORMAT_VERSION}): the file is damaged or not a gateway "
        "store. Restore a backup (profiles hbase-gateway restore)."
    )
