"""The Dagster code location (``profile_assets.definitions``).

Two Dagster features this location relies on are marked beta/preview and warn on every import,
in every process Dagster starts (code server, run workers, the daemon's evaluations), where a
user can do nothing about them. They are silenced here, by exact message, before any asset
module is imported; any other Dagster warning still shows. Every numeric and date setting of
the environment is checked here too, before anything reads one.
"""

import warnings

from dagster import BetaWarning, PreviewWarning

from profile_store.settings.definitions import check_environment

# A bad setting stops the code location's load with the variable, its range and the value,
# before any asset module reads it (and long before a run would start Spark with it).
check_environment()

warnings.filterwarnings(
    "ignore",
    message=r"Parameter `allow_nonexistent_upstream_partitions` of initializer",
    category=BetaWarning,
)
warnings.filterwarnings(
    "ignore",
    message=r"Specifying a partitions_def on an AssetCheckSpec",
    category=PreviewWarning,
)
