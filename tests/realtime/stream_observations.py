"""What a Dagster instance holds of the event stream: the observations of ``event_stream`` and
the results of its lag check, oldest first."""

from __future__ import annotations

from dagster import AssetCheckKey, AssetKey, DagsterInstance

from sensors.event_stream_sensor import EVENT_STREAM, LAG_CHECK


def observations(instance: DagsterInstance) -> list[dict]:
    """Each observation's metadata."""
    records = instance.fetch_observations(AssetKey(EVENT_STREAM), limit=100, ascending=True)
    return [record.asset_observation.metadata for record in records.records]


def lag_check_results(instance: DagsterInstance) -> list[bool]:
    """Whether each evaluation of the lag check passed."""
    key = AssetCheckKey(AssetKey(EVENT_STREAM), LAG_CHECK)
    history = instance.event_log_storage.get_asset_check_execution_history(key, limit=100)
    return [record.event.dagster_event.event_specific_data.passed for record in reversed(history)]
