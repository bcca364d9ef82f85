"""The sensors' evaluation interval comes from PROFILES_SENSOR_INTERVAL_SECONDS."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sensors.interval import DEFAULT_SECONDS, sensor_interval_seconds

REPO = Path(__file__).resolve().parents[2]


def test_unset_means_thirty_seconds():
    assert sensor_interval_seconds({}) == DEFAULT_SECONDS == 30


def test_a_whole_number_of_seconds_is_used():
    assert sensor_interval_seconds({"PROFILES_SENSOR_INTERVAL_SECONDS": "5"}) == 5


@pytest.mark.parametrize(
    ("value", "words"),
    [("soon", "expected a whole number >= 1, got 'soon'"), ("0", "expected a whole number >= 1")],
)
def test_a_bad_value_is_an_error_naming_the_variable(value, words):
    with pytest.raises(ValueError, match="PROFILES_SENSOR_INTERVAL_SECONDS") as error:
        sensor_interval_seconds({"PROFILES_SENSOR_INTERVAL_SECONDS": value})
    assert words in str(error.value)


def test_both_sensors_take_the_interval_of_the_environment_they_are_loaded_in():
    code = (
        "from sensors.automation_sensor import automation_sensor as a;"
        "from sensors.landing_sensor import landing_sensor as l;"
        "print(a.minimum_interval_seconds, l.minimum_interval_seconds)"
    )
    env = {**os.environ, "PROFILES_SENSOR_INTERVAL_SECONDS": "7"}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["7", "7"]
