"""How often the daemon evaluates the sensors: ``PROFILES_SENSOR_INTERVAL_SECONDS``.

Thirty seconds by default: a landed day or a re-materialized input is picked up within half a
minute, and an idle instance does little work. Lower it for a demo or a test instance.
"""

from __future__ import annotations

import os

DEFAULT_SECONDS = 30
VARIABLE = "PROFILES_SENSOR_INTERVAL_SECONDS"


def sensor_interval_seconds(env: dict[str, str] | None = None) -> int:
    """The configured interval; a value that is not a whole number of seconds >= 1 is an error."""
    text = (os.environ if env is None else env).get(VARIABLE, str(DEFAULT_SECONDS))
    try:
        seconds = int(text)
    except ValueError:
        raise ValueError(f"{VARIABLE}: expected a whole number of seconds, got {text!r}") from None
    if seconds < 1:
        raise ValueError(f"{VARIABLE}: must be at least 1, got {seconds}")
    return seconds
