"""Tests that ``tests/test_suite_tiers.py`` runs in a pytest of its own, to see how the suite
marks and guards them; the name keeps them out of every other run."""

from __future__ import annotations

import subprocess

import pytest


def test_with_a_spark_session(spark):
    assert spark.range(1).count() == 1


@pytest.mark.jvm
def test_starting_java_marked():
    subprocess.run(["java", "-version"], check=True)


def test_starting_java_unmarked():
    subprocess.run(["java", "-version"], capture_output=True)


def test_starting_nothing():
    assert True
