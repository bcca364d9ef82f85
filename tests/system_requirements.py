"""What the test suite needs on the machine besides its Python packages, checked once when a
session starts (``tests/conftest.py``): a missing one stops the run at once with one line that
names what to install, where tests would otherwise skip, or fail one by one much later.
"""

from __future__ import annotations

import glob
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path

DEBIAN_POSTGRES_BINDIRS = "/usr/lib/postgresql/*/bin"
COMMAND_GROUP = "profiles.commands"


def chromium() -> str | None:
    """Debian's chromium, the browser the page tests drive."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def postgres_bindir(debian_bindirs: str = DEBIAN_POSTGRES_BINDIRS) -> Path | None:
    """Where ``initdb`` and ``pg_ctl`` are: on PATH, else Debian's newest
    ``/usr/lib/postgresql/<version>/bin`` (the package keeps them off PATH)."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    debian = sorted(
        (Path(p) for p in glob.glob(debian_bindirs)),
        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0,
    )
    for bindir in reversed(debian):
        if (bindir / "initdb").exists() and (bindir / "pg_ctl").exists():
            return bindir
    return None


def registered_commands() -> bool:
    """The ``profiles run`` command is registered by the installed metadata (pyproject.toml)."""
    return "run" in {entry.name for entry in entry_points(group=COMMAND_GROUP)}


@dataclass(frozen=True)
class Requirement:
    what: str
    needed_by: str
    install: str
    present: Callable[[], object]
    kind: str | None = None
    """The kind of test that needs it (``suite_tiers``); None: every test."""

    def message(self) -> str:
        return f"the test suite needs {self.what} ({self.needed_by}): {self.install}"


REQUIREMENTS = (
    Requirement(
        "Java 17",
        "PySpark and Apache HBase run on it",
        "install it first (Debian: apt-get install -y openjdk-17-jre-headless)",
        lambda: shutil.which("java"),
        "jvm",
    ),
    Requirement(
        "Maven",
        "it resolves the jars of Apache HBase and of Spark's S3A connector",
        "install it first (Debian: apt-get install -y maven)",
        lambda: shutil.which("mvn"),
        "jvm",
    ),
    Requirement(
        "chromium",
        "the page tests drive it",
        "install it first (Debian: apt-get install -y chromium)",
        chromium,
        "browser",
    ),
    Requirement(
        "PostgreSQL's server (initdb, pg_ctl)",
        "the production Dagster instance is tested on it",
        "install it first (Debian: apt-get install -y postgresql)",
        postgres_bindir,
        "postgres",
    ),
    Requirement(
        "npm",
        "the accessibility test installs axe-core with it",
        "install it first (Debian: apt-get install -y npm)",
        lambda: shutil.which("npm"),
        "browser",
    ),
    Requirement(
        "podman, runc and debootstrap",
        "the image tests build the repository's Dockerfile and run its roles",
        "install them first (Debian: apt-get install -y podman runc debootstrap)",
        lambda: all(shutil.which(tool) for tool in ("podman", "runc", "debootstrap")),
        "container",
    ),
    Requirement(
        "the project's current entry points",
        "profiles run is registered in pyproject.toml",
        "install the project again (pip install -e '.[dev,postgres]'; make test does)",
        registered_commands,
    ),
)


def missing(requirements: tuple[Requirement, ...] = REQUIREMENTS) -> list[str]:
    """One line per requirement this machine lacks."""
    return [requirement.message() for requirement in requirements if not requirement.present()]
