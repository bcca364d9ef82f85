"""How the suite tells its kinds of slow test apart (``suite_tiers``), and how ``make
test-fast`` leaves them out: marked from what they use, guarded against what they start."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from suite_tiers import KINDS, deselected_kinds, kinds_of

REPO = Path(__file__).resolve().parents[1]
PROBES = "tests/tier_probes.py"


def fast_tests() -> str:
    """``make test-fast``'s ``-m`` expression, as the Makefile gives it."""
    return re.search(r"^FAST_TESTS := (.+)$", (REPO / "Makefile").read_text(), re.M).group(1)


def probe_run(*options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *options, PROBES],
        cwd=REPO,
        env={key: value for key, value in os.environ.items() if key != "PYTEST_ADDOPTS"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_test_is_of_the_kinds_of_the_fixtures_it_uses_transitively():
    item = SimpleNamespace(nodeid="tests/x/test_a.py::test_b", fixturenames=["tmp_path", "spark"])
    assert kinds_of(item) == {"jvm"}


def test_a_test_in_a_directory_of_one_kind_is_of_that_kind_whatever_it_uses():
    item = SimpleNamespace(nodeid="tests/conformance/test_a.py::test_b", fixturenames=[])
    assert kinds_of(item) == {"jvm"}


def test_a_test_that_uses_none_of_them_is_of_no_kind():
    item = SimpleNamespace(nodeid="tests/lake/test_a.py::test_b", fixturenames=["tmp_path"])
    assert kinds_of(item) == set()


def test_make_test_fast_deselects_every_kind():
    assert deselected_kinds(fast_tests()) == set(KINDS)


def test_make_test_deselects_none():
    assert deselected_kinds("") == set()


def test_a_kind_is_deselected_only_when_its_every_test_is():
    assert deselected_kinds("not jvm") == {"jvm"}
    assert deselected_kinds("jvm") == set()  # a test of the JVM and a browser runs


def test_every_kind_is_a_marker_registered_with_its_meaning(pytestconfig):
    registered = {line.split(":")[0] for line in pytestconfig.getini("markers")}
    assert set(KINDS) <= registered


def test_a_test_using_the_spark_fixture_is_left_out_of_the_fast_tier():
    completed = probe_run("--collect-only", "-q", "-m", fast_tests())
    assert completed.returncode == 0, completed.stdout[-2000:]
    assert f"{PROBES}::test_starting_nothing" in completed.stdout
    assert f"{PROBES}::test_with_a_spark_session" not in completed.stdout
    assert "2/4 tests collected (2 deselected)" in completed.stdout


def test_in_the_fast_tier_an_unmarked_jvm_launch_fails_saying_to_mark_it():
    completed = probe_run("-m", fast_tests())
    assert completed.returncode == pytest.ExitCode.TESTS_FAILED, completed.stdout[-3000:]
    assert "FAILED tests/tier_probes.py::test_starting_java_unmarked" in completed.stdout
    assert "jvm java -version" in completed.stdout
    assert "Mark it @pytest.mark.jvm" in completed.stdout
    assert "1 failed, 1 passed, 2 deselected" in completed.stdout
