"""A machine without what the suite needs stops the run at once, naming what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from system_requirements import REQUIREMENTS, Requirement, missing, postgres_bindir

REPO = Path(__file__).resolve().parents[1]


def test_without_java_maven_and_chromium_each_is_named_with_its_debian_package(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path))
    lacking = missing(REQUIREMENTS[:3])
    assert [line.split(" (")[0] for line in lacking] == [
        "the test suite needs Java 17",
        "the test suite needs Maven",
        "the test suite needs chromium",
    ]
    assert "apt-get install -y openjdk-17-jre-headless" in lacking[0]
    assert "apt-get install -y maven" in lacking[1]
    assert "apt-get install -y chromium" in lacking[2]
    assert not any("\n" in line for line in lacking)


def test_without_postgresqls_server_binaries_it_is_named_with_its_debian_package(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("PATH", str(tmp_path))
    absent = str(tmp_path / "*" / "bin")
    requirement = next(r for r in REQUIREMENTS if r.present is postgres_bindir)
    elsewhere = Requirement(
        requirement.what,
        requirement.needed_by,
        requirement.install,
        lambda: postgres_bindir(absent),
    )
    assert missing((elsewhere,)) == [
        "the test suite needs PostgreSQL's server (initdb, pg_ctl) (the production Dagster "
        "instance is tested on it): install it first (Debian: apt-get install -y postgresql)"
    ]


def test_a_session_on_a_machine_without_them_stops_before_any_test(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/lake"],
        cwd=REPO,
        env={**os.environ, "PATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 4, completed.stdout[-2000:]
    assert "the test suite needs Java 17" in completed.stdout + completed.stderr
    assert " passed" not in completed.stdout and " skipped" not in completed.stdout
