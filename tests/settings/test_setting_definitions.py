"""The environment's numeric and date settings: one definition each, checked before any work."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from datasketches import AccumulatorPolicy, theta_union, update_theta_sketch, update_tuple_sketch

from profile_store.settings.definitions import (
    ERASURE_MAX_PROFILES,
    HTTP_BODY_TIMEOUT_SECONDS,
    SETTINGS,
    SKETCH_LG_K,
    START_DATE,
    SettingError,
    check_environment,
)

REPO = Path(__file__).resolve().parents[2]


def test_a_sketch_size_below_the_range_names_the_variable_the_range_and_the_value():
    with pytest.raises(SettingError) as refused:
        SKETCH_LG_K.parse("3")
    assert str(refused.value) == (
        "PROFILES_SKETCH_LG_K: expected a whole number from 5 to 26 (what both DataSketches "
        "and Spark's sketch aggregates accept), got '3'"
    )


def test_a_sketch_size_above_the_range_is_refused():
    with pytest.raises(SettingError, match="PROFILES_SKETCH_LG_K: .* from 5 to 26"):
        SKETCH_LG_K.parse("27")


@pytest.mark.parametrize("lg_k", [SKETCH_LG_K.minimum, SKETCH_LG_K.maximum])
def test_datasketches_builds_every_sketch_kind_at_both_ends_of_the_range(lg_k):
    update_theta_sketch(lg_k)
    theta_union(lg_k)
    update_tuple_sketch(AccumulatorPolicy(), lg_k)


@pytest.mark.parametrize("lg_k", [SKETCH_LG_K.minimum - 1, SKETCH_LG_K.maximum + 1])
def test_datasketches_refuses_the_sizes_just_outside_the_range(lg_k):
    with pytest.raises(ValueError, match="lg_k must not be"):
        update_theta_sketch(lg_k)


@pytest.mark.parametrize("lg_k", [SKETCH_LG_K.minimum, SKETCH_LG_K.maximum])
def test_spark_aggregates_sketches_at_both_ends_of_the_range(spark, lg_k):
    from pyspark.sql import functions as F

    users = spark.range(10).withColumn("one", F.lit(1))
    row = users.agg(
        F.theta_sketch_estimate(F.theta_sketch_agg("id", lg_k)).alias("theta"),
        F.tuple_sketch_agg_integer("id", "one", lg_k, "sum").isNotNull().alias("tuple"),
    ).first()
    assert row["theta"] == 10 and row["tuple"]


@pytest.mark.parametrize("lg_k", [3, 27])
def test_spark_refuses_sizes_outside_its_own_range_of_4_to_26(spark, lg_k):
    from pyspark.sql import functions as F

    with pytest.raises(Exception, match="4 and 26"):
        spark.range(10).agg(F.theta_sketch_agg("id", lg_k)).collect()


def test_an_unset_or_blank_setting_reads_its_default():
    assert SKETCH_LG_K.read({}) == 12
    assert SKETCH_LG_K.read({"PROFILES_SKETCH_LG_K": "  "}) == 12
    assert START_DATE.read({}) == date(2026, 11, 1)


def test_a_value_that_is_not_a_number_is_refused_with_the_expected_type():
    with pytest.raises(SettingError, match=r"PROFILES_ERASURE_MAX_PROFILES: expected a whole "):
        ERASURE_MAX_PROFILES.read({"PROFILES_ERASURE_MAX_PROFILES": "ten"})


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf"])
def test_a_number_of_seconds_must_be_finite_and_above_zero(text):
    with pytest.raises(SettingError, match=r"expected a number > 0, got"):
        HTTP_BODY_TIMEOUT_SECONDS.parse(text)


def test_a_date_setting_refuses_a_value_that_is_not_a_date():
    with pytest.raises(SettingError, match=r"PROFILES_START_DATE: expected a date as YYYY-MM-DD"):
        START_DATE.parse("Nov 1")


def test_checking_the_environment_lists_every_bad_setting_at_once():
    env = {"PROFILES_SKETCH_LG_K": "3", "SPARK_SHUFFLE_PARTITIONS": "0"}
    with pytest.raises(SettingError) as refused:
        check_environment(env)
    lines = str(refused.value).splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "PROFILES_SKETCH_LG_K",
        "SPARK_SHUFFLE_PARTITIONS",
    ]


def test_every_setting_is_defined_once():
    names = [setting.name for setting in SETTINGS]
    assert len(names) == len(set(names))


def _configuration_rows() -> dict[str, list[str]]:
    text = (REPO / "docs" / "configuration.md").read_text()
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            for name in re.findall(r"`([A-Z0-9_]+)`", cells[0]):
                rows[name] = cells
    return rows


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.name)
def test_the_configuration_page_lists_the_setting_with_its_default_and_range(setting):
    cells = _configuration_rows().get(setting.name)
    assert cells is not None, f"{setting.name} has no row in docs/configuration.md"
    if setting.default is not None:
        assert f"`{setting.shown_default()}`" in cells[1]
    assert setting.valid_values().split(" (")[0] in cells[2]


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        capture_output=True,
        text=True,
    )


def test_the_code_location_does_not_load_with_a_bad_setting(tmp_path):
    loaded = _run(["-c", "import profile_assets.definitions"], tmp_path, PROFILES_SKETCH_LG_K="3")
    assert loaded.returncode != 0
    assert "PROFILES_SKETCH_LG_K: expected a whole number from 5 to 26" in loaded.stderr


def test_a_command_refuses_a_bad_setting_with_exit_2_before_any_work(tmp_path):
    completed = _run(
        ["-m", "profile_store.cli", "run", "2026-11-02"], tmp_path, SPARK_SHUFFLE_PARTITIONS="0"
    )
    assert completed.returncode == 2
    assert completed.stderr.strip() == (
        "profiles run: SPARK_SHUFFLE_PARTITIONS: expected a whole number >= 1, got '0'"
    )
    assert not (tmp_path / ".dagster_home").exists()


def test_the_dagster_resources_refuse_a_bad_setting():
    from resources import resources_from_env

    with pytest.raises(SettingError, match="HBASE_THRIFT_PORT: expected a whole number from 1"):
        resources_from_env({"HBASE_THRIFT_PORT": "70000"})
