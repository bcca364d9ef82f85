"""The suite's Spark drivers start as ``tests/suite_jvms.py`` says: what saves the suite its CPU
is really in effect (a JVM that cannot map the class archive says nothing and loads every class
from the jars again)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from suite_jvms import (
    SPARK_CODEGEN_DEFAULTS,
    TINY_DATA_SPARK_SETTINGS,
    ClassArchiveError,
    failure_marker,
    remove_other_archives,
    wait_for,
)

REPO = Path(__file__).resolve().parents[2]
DRIVER = """
from profile_store.spark.session import spark_session_from_env
spark = spark_session_from_env()
spark.range(3).count()
spark.stop()
"""


def test_the_sessions_driver_runs_without_code_generation(spark):
    settings = {key: spark.conf.get(key) for key in TINY_DATA_SPARK_SETTINGS}
    assert settings == TINY_DATA_SPARK_SETTINGS


@pytest.mark.jvm
def test_a_driver_started_as_the_pipeline_starts_one_maps_the_class_archive(tmp_path):
    archive = re.search(r"-XX:SharedArchiveFile=(\S+)", os.environ["SPARK_SUBMIT_OPTS"])
    assert archive, os.environ["SPARK_SUBMIT_OPTS"]
    wait_for(Path(archive.group(1)))  # built beside the first tests when it was missing
    loaded = tmp_path / "classes.log"
    options = f"{os.environ['SPARK_SUBMIT_OPTS']} -Xlog:class+load=info:file={loaded}"
    completed = subprocess.run(
        [sys.executable, "-c", DRIVER],
        cwd=REPO,
        env={**os.environ, "SPARK_SUBMIT_OPTS": options},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    lines = loaded.read_text().splitlines()
    from_archive = [line for line in lines if "source: shared objects file" in line]
    assert len(from_archive) > len(lines) / 2, f"{len(from_archive)} of {len(lines)} classes"


def test_the_codegen_defaults_are_sparks_own(spark):
    """What the real-Spark runs set back is what Spark itself would use."""
    sql_conf = spark.sparkContext._jvm.org.apache.spark.sql.internal.SQLConf
    entries = [sql_conf.WHOLESTAGE_CODEGEN_ENABLED(), sql_conf.CODEGEN_FACTORY_MODE()]
    defaults = {entry.key(): entry.defaultValueString() for entry in entries}
    assert defaults == SPARK_CODEGEN_DEFAULTS


def test_a_new_archive_replaces_the_earlier_ones_of_its_installation_and_nothing_else(tmp_path):
    names = [
        "spark-classes-venv1-old.jsa",
        "spark-classes-venv1-new.jsa",
        "spark-classes-venv2-old.jsa",
        "maven.complete",
    ]
    for name in names:
        (tmp_path / name).write_text("")
    remove_other_archives(tmp_path / "spark-classes-venv1-new.jsa")
    kept = sorted(path.name for path in tmp_path.iterdir())
    assert kept == ["maven.complete", "spark-classes-venv1-new.jsa", "spark-classes-venv2-old.jsa"]


def test_a_failed_build_is_reported_with_its_output_to_whoever_waits(tmp_path):
    archive = tmp_path / "spark-classes-venv-build.jsa"
    failure_marker(archive).write_text("java -Xshare:dump failed: no space left on device")
    with pytest.raises(ClassArchiveError, match="no space left on device"):
        wait_for(archive, timeout_s=5)
