"""How often the daemon evaluates the sensors: ``PROFILES_SENSOR_INTERVAL_SECONDS``.

Thirty seconds by default: a landed day or a re-materialized input is picked up within half a
minute, and an idle instance does little work. Lower it for a demo or a test instance.
"""

from __future__ import annotations

from profile_store.settings.definitions import SENSOR_INTERVAL_SECONDS

DEFAULT_SECONDS = SENSOR_INTERVAL_SECONDS.default
VARIABLE = SENSOR_INTERVAL_SECONDS.name


def sensor_interval_seconds(env: dict[str, str] | None = None) -> int:
    """The configured interval; a value that is not a whole number of seconds >= 1 is an error."""
    return SENSOR_INTERVAL_SECONDS.read(env)
