"""Real Spark beside ``local[*]``: the same two days run three ways, compared output by output.

``reference`` runs every asset and check of two generated days with Spark in ``local[*]`` over a
lake directory and an embedded gateway; the cluster and S3A suites run the same days another
way and compare every lake output and every HBase row with it (``pipeline_runs``).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from pipeline_runs import DAYS, EVENTS_PER_DAY, PipelineRun, run_pipeline

from profile_store.generator.lake import generate_lake
from profile_store.lake.layout import LANDING, SUCCESS_MARKER


@pytest.fixture(scope="session")
def generated_days(tmp_path_factory) -> Path:
    """Two generated days, then a day that landed without events (only its ``_SUCCESS``)."""
    root = tmp_path_factory.mktemp("real_spark_generated")
    generate_lake(root, 2, EVENTS_PER_DAY, seed=17, start_date=date.fromisoformat(DAYS[0]))
    empty = root / LANDING / f"date={DAYS[2]}"
    empty.mkdir()
    (empty / SUCCESS_MARKER).write_text("")
    return root


@pytest.fixture(scope="session")
def reference(generated_days, tmp_path_factory) -> PipelineRun:
    """The days in ``local[*]`` over a lake directory, through ``profiles run`` as a user runs
    them from the command line: what every other way must match."""
    return run_pipeline(
        tmp_path_factory.mktemp("reference"),
        generated_days,
        {"SPARK_MASTER": "local[2]"},
        as_the_ui_runs_it=True,
    )
