"""The staging directory of a bulk load (``bulk_load``): where the job writes its cell files.

It lies in the store's data directory and is owned by its load while the load runs: a load
killed mid-way leaves it, holding ids, and the next load or major compaction removes every
staging directory no live load owns, and the empty claim a load killed while claiming its
directory leaves. Apart from ``bulk_load`` (and its Arrow) because every gateway's major
compaction cleans up here, and a gateway's start should not wait for Arrow's import.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

STAGING_PREFIX = "bulk-load-"
"""Staging directories under the store's data directory."""
_CLAIMING_PREFIX = ".claiming-"  # a staging directory's name until its load owns it
_OWNER_LOCK = ".owner.lock"  # locked (flock) by the live load; the system unlocks a dead one's


@contextlib.contextmanager
def staging_directory(data_dir: Path) -> Iterator[Path]:
    """A new staging directory under ``data_dir``, owned by this load until it is removed on exit.

    Ownership is an exclusive ``flock`` on a file in it, held by an open descriptor, so it ends
    with the process however the process ends. The directory is locked under a name that
    ``remove_abandoned_staging`` ignores, then renamed: a ``bulk-load-*`` directory nobody holds
    the lock of belongs to no live load. Staging directories of dead loads are removed first.
    A writer that replaces its output directory (Spark's ``overwrite``) writes into a directory
    inside this one, which keeps the lock file.
    """
    remove_abandoned_staging(data_dir)
    claiming = Path(tempfile.mkdtemp(prefix=_CLAIMING_PREFIX + STAGING_PREFIX, dir=data_dir))
    owner = os.open(claiming / _OWNER_LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    staging = claiming
    try:
        fcntl.flock(owner, fcntl.LOCK_EX)
        staging = data_dir / claiming.name.removeprefix(_CLAIMING_PREFIX)
        claiming.rename(staging)
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.close(owner)


CLAIM_GRACE_SECONDS = 60.0
"""A claiming directory older than this that nobody locks was left by a load killed between
creating and locking it (a claim takes microseconds); a younger one may be a claim under way."""


def remove_abandoned_staging(data_dir: Path) -> list[Path]:
    """Remove the staging directories under ``data_dir`` that no live load owns (a load killed
    mid-way leaves its cells, ids among them), and the empty claims of loads killed while they
    claimed one; returns them."""
    removed = []
    for staging in sorted(data_dir.glob(f"{STAGING_PREFIX}*")):
        if staging.is_dir() and not _owned(staging):
            shutil.rmtree(staging, ignore_errors=True)
            removed.append(staging)
    stale_before = time.time() - CLAIM_GRACE_SECONDS
    for claim in sorted(data_dir.glob(f"{_CLAIMING_PREFIX}{STAGING_PREFIX}*")):
        with contextlib.suppress(FileNotFoundError):  # renamed by its load meanwhile
            if claim.is_dir() and claim.stat().st_mtime < stale_before and not _owned(claim):
                shutil.rmtree(claim, ignore_errors=True)
                removed.append(claim)
    return removed


def _owned(staging: Path) -> bool:
    try:
        lock = os.open(staging / _OWNER_LOCK, os.O_RDWR)
    except FileNotFoundError:  # never owned through a lock: left by an older load
        return False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(lock)  # and with it the lock just taken, if it was
    return False
