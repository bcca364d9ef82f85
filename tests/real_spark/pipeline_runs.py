"""Running the two test days through the whole pipeline in a subprocess, and comparing runs.

Each run is a subprocess (``python -m profile_assets.materialize_days``) with a Spark session of
its own, configured from the environment as a Dagster run configures it. Runs are compared by
their outputs: every Parquet data set of the lake (rows sorted, the run's own lake location
masked) and every HBase table's cells (timestamps aside).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import boto3
import happybase
import pyarrow.parquet as pq
from suite_jvms import SPARK_CODEGEN_DEFAULTS

from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.layout import GROUND_TRUTH, LANDING

DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")  # the last one without events
S3_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_REGION": "us-east-1",
}  # the moto server's; a user's come from the usual AWS environment
EVENTS_PER_DAY = 5_000  # above the size where the sample's shared logins fall under the guard
LAKE = "<lake>"


@dataclass
class PipelineRun:
    """Where one run left its lake (a local copy for S3) and its HBase store, and its output."""

    lake: Path
    lake_uri: str
    hbase_dir: Path
    work: Path
    output: str


def run_pipeline(
    tmp: Path,
    landing: Path,
    environment: dict[str, str],
    lake_uri: str | None = None,
    *,
    as_the_ui_runs_it: bool = False,
) -> PipelineRun:
    """Run ``DAYS`` through every asset and check; the lake is a copy of ``landing``'s lake
    unless ``lake_uri`` names one the caller prepared (S3).

    ``as_the_ui_runs_it``: through ``profiles run`` (runs of ``daily_pipeline`` recorded in a
    ``.dagster_home`` it creates in ``tmp``), else ``materialize_days`` (a throw-away instance).
    """
    lake = tmp / "lake"
    if lake_uri is None:
        shutil.copytree(landing / LANDING, lake / LANDING)
        shutil.copytree(landing / GROUND_TRUTH, lake / GROUND_TRUTH)
        lake_uri = str(lake)
    hbase_dir = tmp / "hbase"
    env = {
        **os.environ,
        "PROFILES_LAKE_ROOT": lake_uri,
        "PROFILES_HBASE_DATA_DIR": str(hbase_dir),
        "PROFILES_START_DATE": DAYS[0],
        "SPARK_SHUFFLE_PARTITIONS": "2",
        "PYSPARK_PYTHON": sys.executable,
        **environment,
    }
    # Spark's own code generation, which the suite's other drivers leave out (``suite_jvms``):
    # these runs are the pipeline's real Spark, compared output by output.
    spark_conf = json.loads(environment.get("SPARK_CONF_JSON", "{}"))
    env["SPARK_CONF_JSON"] = json.dumps({**SPARK_CODEGEN_DEFAULTS, **spark_conf})
    env.pop("DAGSTER_HOME", None)
    if as_the_ui_runs_it:
        command = ["-m", "profile_store.cli", "run", DAYS[0], DAYS[-1]]
    else:
        command = ["-m", "profile_assets.materialize_days", *DAYS]
    completed = subprocess.run(
        [sys.executable, *command], cwd=tmp, env=env, capture_output=True, text=True, timeout=900
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    return PipelineRun(lake, lake_uri, hbase_dir, tmp, output)


# -- comparing two runs ------------------------------------------------------------------------


def _normal(value: object, lake_uri: str) -> object:
    """A value with the run's own lake location replaced (quarantine rows name their files)."""
    if isinstance(value, str):
        return value.replace(lake_uri, LAKE)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, dict):
        return {k: _normal(v, lake_uri) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normal(v, lake_uri) for v in value]
    return value


def lake_datasets(run: PipelineRun) -> dict[str, list[str]]:
    """Every Parquet data set the run wrote (landing aside): its rows, normalized and sorted."""
    datasets: dict[str, list[str]] = {}
    uris = {run.lake_uri, Path(run.lake).resolve().as_uri(), str(Path(run.lake).resolve())}
    for directory in sorted({p.parent for p in run.lake.rglob("*.parquet")}):
        relative = directory.relative_to(run.lake).as_posix()
        if relative.startswith(LANDING):
            continue
        rows = pq.read_table(sorted(directory.glob("*.parquet"))).to_pylist()
        for uri in sorted(uris, key=len, reverse=True):
            rows = [_normal(row, uri) for row in rows]
        datasets[relative] = sorted(json.dumps(row, sort_keys=True, default=str) for row in rows)
    return datasets


def hbase_tables(hbase_dir: Path) -> dict[str, dict[bytes, dict[bytes, bytes]]]:
    """Every table of the run's embedded store, cell values by row and column (no timestamps)."""
    with EmbeddedGateway(hbase_dir) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        try:
            return {
                name.decode(): dict(connection.table(name).scan(batch_size=2000))
                for name in connection.tables()
            }
        finally:
            connection.close()


def differences(expected: dict, actual: dict, limit: int = 5) -> list[str]:
    """Human-readable differences between two ``{name: contents}`` maps."""
    found = [f"only in the reference: {n}" for n in sorted(set(expected) - set(actual))]
    found += [f"only in this run: {n}" for n in sorted(set(actual) - set(expected))]
    for name in sorted(set(expected) & set(actual)):
        if expected[name] != actual[name]:
            found.append(f"{name}: contents differ")
    return found[:limit]


def s3_client(endpoint: str):
    """A boto3 client of the test S3 server, with the credentials the Spark side gets."""
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=S3_CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=S3_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=S3_CREDENTIALS["AWS_REGION"],
    )
