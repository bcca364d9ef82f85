"""The Dagster code location (``profile_assets.definitions``).

Two Dagster features this location relies on are marked beta/preview and warn on every import,
in every process Dagster starts (code server, run workers, the daemon's evaluations), where a
user can do nothing about them. They are silenced here, by exact message, before any asset
module is imported; any other Dagster warning still shows.
"""

import warnings

from dagster import BetaWarning, PreviewWarning

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
