"""The one partitioning of the lake: UTC days from ``PROFILES_START_DATE``."""

from __future__ import annotations

from dagster import DailyPartitionsDefinition, TimeWindowPartitionMapping

from profile_store.lake.settings import start_date_from_env

daily_partitions = DailyPartitionsDefinition(
    start_date=start_date_from_env().isoformat(), timezone="UTC"
)

previous_day = TimeWindowPartitionMapping(
    start_offset=-1, end_offset=-1, allow_nonexistent_upstream_partitions=True
)
"""Day D depends on day D-1 (of itself): assets that fold each day into the day before."""
