"""A stream job's own report, read from its metrics listener (``profiles stream --metrics-port``).

Kafka tells how far a consumer group is behind (``stream_lag``), not whether the process is
alive, ready, or what it applied: only the job knows. This reads its ``/metrics`` (the events
it wrote and committed since it started), ``/healthz`` and ``/readyz``, and changes nothing. A
listener that does not answer is reported, not raised: a stopped job is part of the picture.
"""

from __future__ import annotations

import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

METRICS_URLS_VARIABLE = "PROFILES_STREAM_METRICS_URLS"
_EVENTS_FAMILY = re.compile(r"^profiles_(?P<job>\w+)_events$")


def metrics_urls_from_env(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """``PROFILES_STREAM_METRICS_URLS``: comma-separated base URLs of the stream jobs' metrics
    listeners (``http://host:port``); none by default."""
    text = (os.environ if env is None else env).get(METRICS_URLS_VARIABLE, "")
    return tuple(url.strip().rstrip("/") for url in text.split(",") if url.strip())


@dataclass(frozen=True)
class ConsumerReport:
    """One stream job as its listener at ``url`` reports it."""

    url: str
    job: str | None = None  # ``live_profiles`` or ``lake_sink``, from its metrics' names
    events: int | None = None  # written and committed by the process since it started
    alive: str | None = None  # ``ok``, or why the loop is thought wedged
    ready: str | None = None  # ``ok``, or what it waits for
    error: str | None = None  # the listener did not answer

    @property
    def name(self) -> str:
        """How the observation names it: the job and the listener's address."""
        address = self.url.split("://", 1)[-1]
        return f"{self.job or 'stream job'} at {address}"


def _get(url: str, timeout: float) -> tuple[int, str]:
    """Status and body; a 503 is an answer, not an error."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310
            return answer.status, answer.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def _probe_text(status: int, body: str) -> str:
    text = body.strip() or f"HTTP {status}"
    return text if status == 200 else f"no: {text}"


def probe_consumer(url: str, timeout: float = 5.0) -> ConsumerReport:
    """The job's events committed, liveness and readiness from the listener at ``url``."""
    try:
        _, metrics = _get(f"{url}/metrics", timeout)
        alive = _probe_text(*_get(f"{url}/healthz", timeout))
        ready = _probe_text(*_get(f"{url}/readyz", timeout))
    except (urllib.error.URLError, OSError) as error:
        return ConsumerReport(url, error=str(getattr(error, "reason", error)))
    for family in text_string_to_metric_families(metrics):
        found = _EVENTS_FAMILY.match(family.name)
        if found and family.type == "counter":
            total = next(s.value for s in family.samples if s.name.endswith("_total"))
            return ConsumerReport(url, found["job"], int(total), alive, ready)
    return ConsumerReport(url, alive=alive, ready=ready, error="no stream job's metrics there")
