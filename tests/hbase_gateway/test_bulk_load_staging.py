"""A bulk load's staging directory: owned by its load while it runs, removed when it ends, and
removed by the next load or ``majorCompact`` once its load died, never while it lives."""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

import happybase
import pytest
from killed_bulk_load import killed_load

from profile_store.hbase_gateway.bulk_staging import (
    CLAIM_GRACE_SECONDS,
    STAGING_PREFIX,
    remove_abandoned_staging,
    staging_directory,
)
from profile_store.hbase_gateway.process import EmbeddedGateway

SECRET = b"forgotten-staged-5be1"


def holding_secret(data_dir: Path) -> list[Path]:
    return sorted(
        path for path in data_dir.rglob("*") if path.is_file() and SECRET in path.read_bytes()
    )


def test_a_load_removes_its_staging_directory_when_it_ends(tmp_path) -> None:
    with staging_directory(tmp_path) as staging:
        assert staging.is_dir() and staging.name.startswith(STAGING_PREFIX)
    assert list(tmp_path.iterdir()) == []


def test_a_killed_loads_staging_directory_is_removed_and_a_live_ones_kept(tmp_path) -> None:
    with staging_directory(tmp_path) as live:
        dead = killed_load(tmp_path, SECRET)
        assert holding_secret(tmp_path)  # the killed load left its cells behind: not vacuous
        assert remove_abandoned_staging(tmp_path) == [dead]
        assert live.is_dir() and holding_secret(tmp_path) == []


def test_the_next_load_removes_a_killed_loads_staging_directory(tmp_path) -> None:
    dead = killed_load(tmp_path, SECRET)
    with staging_directory(tmp_path):
        assert not dead.exists()


def test_a_staging_directory_without_an_owner_lock_is_removed(tmp_path) -> None:
    """As an earlier version of the load left them."""
    (tmp_path / f"{STAGING_PREFIX}old").mkdir()
    assert remove_abandoned_staging(tmp_path) == [tmp_path / f"{STAGING_PREFIX}old"]


def claim_left_at(data_dir: Path, seconds_ago: float) -> Path:
    """A claim as a load killed between creating and renaming it leaves it: its lock file."""
    claim = data_dir / f".claiming-{STAGING_PREFIX}k1ll3d"
    claim.mkdir()
    (claim / ".owner.lock").touch()
    then = time.time() - seconds_ago
    os.utime(claim, (then, then))
    return claim


def test_a_claim_its_load_died_making_is_removed_once_older_than_a_claim_takes(tmp_path) -> None:
    claim = claim_left_at(tmp_path, CLAIM_GRACE_SECONDS + 5)
    assert remove_abandoned_staging(tmp_path) == [claim]
    assert list(tmp_path.iterdir()) == []


def test_a_young_claim_is_kept_it_may_be_a_load_claiming_now(tmp_path) -> None:
    claim = claim_left_at(tmp_path, 1)
    assert remove_abandoned_staging(tmp_path) == []
    assert claim.is_dir()


def test_an_old_claim_whose_lock_is_held_is_kept(tmp_path) -> None:
    claim = claim_left_at(tmp_path, CLAIM_GRACE_SECONDS + 5)
    held = os.open(claim / ".owner.lock", os.O_RDWR)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert remove_abandoned_staging(tmp_path) == []
        assert claim.is_dir()
    finally:
        os.close(held)


@pytest.fixture
def gateway(tmp_path) -> Iterator[EmbeddedGateway]:
    with EmbeddedGateway(tmp_path / "store") as running:
        yield running


def test_majorcompact_removes_a_killed_loads_staging_directory_but_not_a_live_ones(gateway):
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.create_table("t", {"cf": {"max_versions": 1}})
    dead = killed_load(gateway.data_dir, SECRET)
    with staging_directory(gateway.data_dir) as live:
        (live / "cells").mkdir()
        connection.compact_table("t", major=True)
        assert not dead.exists() and live.is_dir()
        assert holding_secret(gateway.data_dir) == []
    connection.close()
