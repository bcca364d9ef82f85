"""The suite's kinds of slow test, told apart by what they start, and the guard that keeps a run
without a kind honest.

``make test`` runs every test; ``make test-fast`` deselects the kinds (``-m "not jvm and not
browser ..."``) for the edit-test loop. A test's kinds (markers registered in pyproject.toml)
come from the fixtures it uses, transitively (``FIXTURE_KINDS``), and from its directory for the
suites that are wholly of one kind (``DIRECTORY_KINDS``); the few tests that start a JVM by
themselves (a pipeline building its own Spark session, a ``profiles`` subprocess running Spark)
carry the marker in their file.

A run that deselects a kind puts a ``Guard`` first on PATH (and, for ``jvm``, as JAVA_HOME): the
kind's commands (``java``, ``chromium``, ``initdb`` ...) then fail and are recorded, and a test
that started one fails with a message saying which marker it lacks, never skipped.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from itertools import combinations
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

KINDS = ("jvm", "browser", "postgres", "dagster_services", "container")

FIXTURE_KINDS = {
    "spark": ("jvm",),
    "spark_cluster": ("jvm",),
    "apache_hbase": ("jvm",),
    "kafka_broker": ("jvm",),
    "kafka_cluster": ("jvm",),
    "kafka": ("jvm",),
    "headless_dom": ("browser",),
    "page": ("browser",),
    "axe_script": ("browser",),
    "postgres": ("postgres",),
    # The launched runs' webserver and daemon (tests/orchestration, tests/deploy), whose runs
    # are whole days of the pipeline on Spark.
    "dagster": ("dagster_services", "jvm"),
    "webserver": ("dagster_services",),
    "local_ui": ("dagster_services",),
    "image": ("container",),
}
"""A fixture's name, as a test's ``fixturenames`` (the fixtures it uses, transitively) holds it,
and the kinds of what it starts."""

DIRECTORY_KINDS = {
    "real_spark": ("jvm",),
    "conformance": ("jvm",),
}
"""A directory under ``tests/`` whose every test is of these kinds."""

GUARDED_COMMANDS = {
    "jvm": ("java", "mvn"),
    "browser": ("chromium", "chromium-browser", "npm"),
    "postgres": ("initdb", "pg_ctl", "postgres"),
    "container": ("podman", "podman-compose"),
}
"""What a deselected kind may not start. (A Dagster webserver or daemon is started through the
virtualenv's own scripts, which PATH does not reach: ``dagster_services`` is told by fixture
only.)"""

GUARD_VARIABLE = "PROFILES_TESTS_GUARD"
LAUNCHES_VARIABLE = "PROFILES_TESTS_GUARDED_LAUNCHES"

_GUARD_SCRIPT = """#!/bin/sh
echo "{kind} $(basename "$0") $*" >> "${{{launches}:-/dev/null}}"
echo "this run deselects the {kind} tests, and a test started $(basename "$0"): \
mark it @pytest.mark.{kind} (see tests/suite_tiers.py)" >&2
exit 97
"""


def kinds_of(item: pytest.Item) -> set[str]:
    """The kinds of what ``item`` starts, from its fixtures and its directory."""
    kinds = {kind for name in item.fixturenames for kind in FIXTURE_KINDS.get(name, ())}
    parts = item.nodeid.split("::")[0].split("/")
    if len(parts) > 2 and parts[0] == "tests":
        kinds.update(DIRECTORY_KINDS.get(parts[1], ()))
    return kinds


def mark_kinds(items: list[pytest.Item]) -> None:
    for item in items:
        for kind in sorted(kinds_of(item)):
            item.add_marker(kind)


def deselected_kinds(markexpr: str) -> set[str]:
    """The kinds a ``-m`` expression deselects: those whose every test, whatever other kinds
    it is of too, it leaves out."""
    if not markexpr:
        return set()
    expression = Expression.compile(markexpr)

    def selects(marked: set[str]) -> bool:
        return expression.evaluate(lambda name, /, **kwargs: name in marked and not kwargs)

    def others(kind: str) -> list[set[str]]:
        rest = [other for other in KINDS if other != kind]
        return [set(chosen) for n in range(len(rest) + 1) for chosen in combinations(rest, n)]

    return {kind for kind in KINDS if not any(selects({kind, *more}) for more in others(kind))}


class Guard:
    """Stand-ins for the deselected kinds' commands in a directory put first on PATH; each
    process of the run (pytest-xdist's workers too) records their launches in a file of its
    own, read after each phase of a test."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.launches = directory / f"launches-{os.getpid()}.log"
        self._read = 0

    @classmethod
    def install(cls, kinds: set[str]) -> Guard:
        """The stand-ins of ``kinds`` in a new directory, put in this process's environment
        (which pytest-xdist's workers and every subprocess inherit)."""
        directory = Path(tempfile.mkdtemp(prefix="suite-guard-"))
        bin_dir = directory / "bin"
        bin_dir.mkdir()
        for kind in sorted(kinds & GUARDED_COMMANDS.keys()):
            script = _GUARD_SCRIPT.format(kind=kind, launches=LAUNCHES_VARIABLE)
            for command in GUARDED_COMMANDS[kind]:
                (bin_dir / command).write_text(script)
                (bin_dir / command).chmod(0o755)
        os.environ[GUARD_VARIABLE] = str(directory)
        os.environ["PATH"] = os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")])
        if "jvm" in kinds:
            os.environ["JAVA_HOME"] = str(directory)  # pyspark's launcher runs $JAVA_HOME/bin/java
        return cls.adopt()

    @classmethod
    def adopt(cls) -> Guard:
        """The guard the environment names, its launches recorded in this process's file."""
        guard = cls(Path(os.environ[GUARD_VARIABLE]))
        os.environ[LAUNCHES_VARIABLE] = str(guard.launches)
        return guard

    def new_launches(self) -> list[str]:
        """The launches recorded since the last call, each ``kind command args``."""
        if not self.launches.exists():
            return []
        with self.launches.open() as log:
            log.seek(self._read)
            lines = log.read()
            self._read = log.tell()
        return lines.splitlines()

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def launch_failure(launches: list[str]) -> str:
    """What a test that started a deselected kind's command fails with."""
    kinds = sorted({launch.split()[0] for launch in launches})
    started = "\n".join(f"  {launch}" for launch in launches)
    markers = " and ".join(f"@pytest.mark.{kind}" for kind in kinds)
    return (
        f"this run deselects the {', '.join(kinds)} tests, and this test started:\n{started}\n"
        f"Mark it {markers}, or give its fixture's kind in tests/suite_tiers.py "
        "(FIXTURE_KINDS), so that the fast tier (make test-fast) leaves it out."
    )
