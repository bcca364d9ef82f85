"""The one partitioning of the lake: UTC days."""

from __future__ import annotations

import os

from dagster import DailyPartitionsDefinition

DEFAULT_START_DATE = "2026-11-01"

daily_partitions = DailyPartitionsDefinition(
    start_date=os.environ.get("PROFILES_START_DATE", DEFAULT_START_DATE), timezone="UTC"
)
