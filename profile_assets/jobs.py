"""The code location's jobs: a whole day of the daily assets, and the erasure.

The sensors (``sensors/``) launch them by name; their schedules are in ``schedules.py``.
"""

from dagster import AssetSelection, define_asset_job

from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS
from profile_assets.partitions import daily_partitions

# Every run of the job is a whole day's run, however launched: the launchpad and a job backfill
# (which send no tags of their own) as well as the landing sensor and the schedule. Dagster
# merges a job's tags into every run of it. Without the job's tag, the automation sensor could
# read a launchpad run between two of its steps and request the day's downstream assets again.
daily_pipeline = define_asset_job(
    "daily_pipeline",
    selection=AssetSelection.all() - AssetSelection.groups("privacy"),
    partitions_def=daily_partitions,
    tags=WHOLE_DAY_RUN_TAGS,
    description="Every daily asset and its checks for one UTC day.",
)

erasure_job = define_asset_job(
    "erasure_job",
    selection=AssetSelection.assets("erasure"),
    description="Carry out every pending erasure request (profiles forget, the admin API).",
)
