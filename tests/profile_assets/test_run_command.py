"""``profiles run``: which days it runs, and what it refuses (runs themselves: tests/real_spark)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date

import pytest

from profile_assets.run_days import PartitionOutOfRange, check_partitions, days_between

KEYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


def test_a_range_is_every_day_from_first_to_last():
    assert days_between(date(2026, 11, 1), date(2026, 11, 3)) == [
        date(2026, 11, 1),
        date(2026, 11, 2),
        date(2026, 11, 3),
    ]


def test_a_range_that_ends_before_it_starts_is_refused():
    with pytest.raises(PartitionOutOfRange, match="LAST_DAY 2026-11-01 is before DAY 2026-11-03"):
        days_between(date(2026, 11, 3), date(2026, 11, 1))


def test_days_outside_the_partitions_are_named_with_the_setting_to_change():
    with pytest.raises(PartitionOutOfRange) as refused:
        check_partitions([date(2017, 11, 6), date(2026, 11, 2)], KEYS)
    message = str(refused.value)
    assert message.startswith(
        "2017-11-06: not a day partition (partitions: 2026-11-01 .. 2026-11-03)"
    )
    assert "PROFILES_START_DATE" in message


def test_the_command_refuses_a_day_before_the_first_partition_with_exit_2(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "run", "2017-11-06"],
        cwd=tmp_path,
        env={**os.environ, "PROFILES_START_DATE": "2026-11-01"},
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 2
    assert "2017-11-06: not a day partition" in completed.stderr
    assert not (tmp_path / ".dagster_home").exists()  # nothing created for a refused range
