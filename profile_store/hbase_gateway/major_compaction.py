"""HBase's major compaction (``majorCompact`` through Thrift): the compaction pass, then no copy
of what reads no longer see left in the gateway's files."""

from __future__ import annotations

import logging

from .bulk_staging import remove_abandoned_staging
from .errors import GatewayIOError, show_bytes
from .store import Store

logger = logging.getLogger(__name__)

MAJOR_WAL_ATTEMPTS = 1500  # tries 20 ms apart (30 s) to truncate a WAL another process reads


def major_compact(store: Store, name: bytes, wal_attempts: int = MAJOR_WAL_ATTEMPTS) -> None:
    """HBase's major compaction, finished when it returns, and leaving no copy of what reads no
    longer see in the gateway's files.

    HBase rewrites a table's store files without the deleted and overwritten cells and the delete
    markers, so the old files, and with them every copy, are gone afterwards (asynchronously).
    Here: versions beyond ``max_versions``, expired cells and every delete marker of the table
    are dropped (``reclaim.py``), every applied batch leaves the pending log, both SQLite files
    are rebuilt from their live rows (``purge``: ``VACUUM``, which leaves no byte of deleted
    content in free pages or in the unused parts of live pages, for every table of the store),
    and both WALs are checkpointed and truncated to nothing. The staging directories of bulk
    loads that died mid-way, which hold their cells, are removed too (``bulk_staging.py``; a live
    load's are not). An ``IOError`` if another process kept a WAL busy for ``wal_attempts``
    tries, 20 ms apart: the compaction itself is done, the copies in the WAL remain until the
    next checkpoint, and the caller knows it.

    Deletes between two major compactions leave their bytes in the file, as HBase's store files
    keep them until one (``secure_delete`` is off: zeroing each delete did not suffice, see
    ``purge``, and cost the background compactions about a tenth more).
    """
    store.compact(name, major=True)
    for staging in remove_abandoned_staging(store.data_dir):
        logger.info("removed %s, left by a bulk load that died", staging.name)
    if not purge(store, wal_attempts):
        raise GatewayIOError(
            f"IOException: major compaction of {show_bytes(name)} done, but a write-ahead log "
            "stayed busy (another process reading an old snapshot); its copies remain until "
            "the next checkpoint"
        )


def purge(store: Store, attempts: int = 50) -> bool:
    """Leave no byte of deleted or overwritten content in any file of the store: apply what is
    pending, drop every applied batch from the pending log and rebuild it, then rebuild the
    database file (``VACUUM``) and truncate its WAL. False if another process kept a WAL busy
    for ``attempts`` tries 20 ms apart (the rebuilt file is then written, but the WAL still
    holds the old pages).

    Zeroing deleted cells (``secure_delete``) is not enough: SQLite rebalancing a page leaves
    bytes of cells that were there in its unused part, which a later delete does not reach (a
    sketch hash was found so after a major compaction). ``VACUUM`` copies the live rows into a
    new database and writes every page of the file from it, so only live content remains; it
    needs free space for one copy of the store, in the temporary directory (``SQLITE_TMPDIR``,
    else ``/var/tmp`` or ``/tmp``), never in memory. Writers of every table wait while it runs
    (seconds per hundred MB).
    """
    if not store.drop_applied_batches(attempts):
        return False
    store.vacuum()
    return store.checkpoint(attempts)
