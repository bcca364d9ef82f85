"""Observations of ``event_stream`` recorded by the process that runs the stream, on a cadence.

``event_stream_sensor`` records them only while a Dagster daemon ticks it (``make ui``, a
deployment). A process that starts the stream itself and has no daemon beside it (the demo's
real-time act) records the same observations and check results into its Dagster instance:
one when the stream is up, one every ``interval_s`` while it runs, and a last one before it is
stopped, so that the asset's page lists what the stream did.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from dagster import DagsterInstance

from profile_store.realtime.stream_lag import StreamObservation, max_lag_from_env, observe_stream
from sensors.event_stream_sensor import record_stream_health

DEFAULT_INTERVAL_S = 5.0
"""The demo's stream runs for seconds, not the minutes between the sensor's ticks."""


class StreamObserver:
    """Observes the stream that ``env`` describes (Kafka, the groups, the jobs' listeners) and
    records each observation in ``instance``."""

    def __init__(
        self,
        instance: DagsterInstance,
        env: Mapping[str, str],
        interval_s: float = DEFAULT_INTERVAL_S,
        max_lag: int | None = None,
    ) -> None:
        if not interval_s > 0:
            raise ValueError(f"interval_s must be greater than 0, got {interval_s}")
        self.instance = instance
        self.env = dict(env)
        self.interval_s = interval_s
        self.max_lag = max_lag_from_env(self.env) if max_lag is None else max_lag
        self.recorded = 0
        self.last: StreamObservation | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def observe(self) -> StreamObservation:
        """One observation, recorded now."""
        observation = observe_stream(self.env)
        record_stream_health(self.instance, observation, self.max_lag)
        self.recorded += 1
        self.last = observation
        return observation

    def _every_interval(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.observe()

    def start(self) -> StreamObserver:
        """The first observation (recorded before this returns), then one every interval."""
        self.observe()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._every_interval, name="stream-observer", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> StreamObservation:
        """Ends the cadence (after an observation in hand) and records the last one."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        return self.observe()
