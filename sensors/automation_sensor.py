"""The sensor that evaluates the assets' automation conditions, on by default.

Dagster would create ``default_automation_condition_sensor`` by itself, but stopped; declaring it
lets it start RUNNING, as the landing sensor does. The conditions are built-in ones, so the
daemon evaluates them from the code location's snapshot (no user code server call per tick).
A tick that requests more than one day of an asset emits one backfill, which runs the days of
the self-dependent assets in order.

The UI's *Auto-materialize on/off* tag (a job's page, an asset group's) reads an instance-wide
switch of Dagster's pre-sensor automation daemon, which an instance stores as paused until
someone flips it, and which sensors ignore. Left paused, the tag says "off" beside a running
``automation_sensor``: ``automation_tag_follows_the_sensor`` sets it where an instance is
prepared (``make ui``, the demo).
"""

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DagsterInstance,
    DefaultSensorStatus,
)

from sensors.interval import sensor_interval_seconds

automation_sensor = AutomationConditionSensorDefinition(
    "automation_sensor",
    target=AssetSelection.all(),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=sensor_interval_seconds(),
    emit_backfills=True,
    description=(
        "Recomputes a day's downstream assets when one of that day's inputs changed outside a "
        "run that already covered them (e.g. raw_events re-materialized alone from the UI)."
    ),
)


def automation_tag_follows_the_sensor(instance: DagsterInstance) -> None:
    """Set the pre-sensor daemon's switch to ``automation_sensor``'s default state (running)."""
    from dagster._daemon.asset_daemon import set_auto_materialize_paused

    running = automation_sensor.default_status == DefaultSensorStatus.RUNNING
    set_auto_materialize_paused(instance, not running)
