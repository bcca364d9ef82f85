"""The project's code location with a Spark resource that holds each run at a gate.

A run's first Spark step (``raw_events``) waits until the test opens the gate, so that the test
decides how long a run stays in progress without a sleep in any product code path. Everything
else (assets, jobs, sensors, the other resources, the executor) is the project's ``defs``
unchanged; the workspace the test writes gives the location the project's location name, so that
the instance's one-run-of-the-location limit applies to it.

The gate is the directory named by ``HELD_RUNS_GATE`` in the environment of the webserver and
the daemon (their run workers inherit it): a run writes ``waiting-<pid>`` there when it reaches
the gate, and goes on once the file ``open`` exists.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from dagster import Definitions
from dagster_pyspark import LazyPySparkResource

from profile_assets.definitions import defs as project_defs

GATE_VARIABLE = "HELD_RUNS_GATE"
OPEN = "open"


class HeldSparkResource(LazyPySparkResource):
    """Spark as the project configures it; the first session of a process waits for the gate."""

    @property
    def spark_session(self) -> Any:
        gate = Path(os.environ[GATE_VARIABLE])
        if not (gate / OPEN).exists():
            (gate / f"waiting-{os.getpid()}").touch()
        while not (gate / OPEN).exists():
            time.sleep(0.5)
        return super().spark_session


defs = Definitions(
    assets=project_defs.assets,
    asset_checks=project_defs.asset_checks,
    jobs=project_defs.jobs,
    sensors=project_defs.sensors,
    schedules=project_defs.schedules,
    resources={
        **project_defs.resources,
        "spark": HeldSparkResource(spark_config=project_defs.resources["spark"].spark_config),
    },
    executor=project_defs.executor,
)
