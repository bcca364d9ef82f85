"""The one partitioning of the lake: UTC days."""

from __future__ import annotations

import os

from dagster import DailyPartitionsDefinition, TimeWindowPartitionMapping

DEFAULT_START_DATE = "2026-11-01"

daily_partitions = DailyPartitionsDefinition(
    start_date=os.environ.get("PROFILES_START_DATE", DEFAULT_START_DATE), timezone="UTC"
)

previous_day = TimeWindowPartitionMapping(
    start_offset=-1, end_offset=-1, allow_nonexistent_upstream_partitions=True
)
"""Day D depends on day D-1 (of itself): assets that fold each day into the day before."""
