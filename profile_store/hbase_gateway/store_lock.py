"""Who holds a data directory's store: every process that opens it, or a restore replacing it.

SQLite lets any number of processes open the store, so a restore could replace the files under
a running gateway, whose connections would go on reading and writing the old ones (and its WAL
would be replayed into the new file). Every ``Store`` therefore holds a shared ``flock`` on the
data directory's ``store.lock`` while it is open, and a restore takes it exclusively, without
waiting: it fails while a gateway (any of its processes) runs, and a gateway starting during a
restore fails. The kernel releases a lock when its process dies, even by ``kill -9``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from .data_dir import LOCK_FILE


class StoreInUse(RuntimeError):
    """The store is held by another process: a gateway, or a restore."""


def hold_shared(data_dir: Path) -> int:
    """Hold the store open: returns the descriptor to ``release``; raises ``StoreInUse`` while a
    restore replaces the store."""
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreInUse(
            f"{data_dir}: a restore is replacing this store; start the gateway once it is done"
        ) from None
    return fd


def release(fd: int) -> None:
    os.close(fd)


@contextlib.contextmanager
def held_exclusively(data_dir: Path) -> Iterator[None]:
    """Hold the store for a restore; raises ``StoreInUse`` while any process has it open."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise StoreInUse(
                f"{data_dir}: a gateway (or another restore) has this store open; stop it first"
            ) from None
        yield
    finally:
        os.close(fd)
