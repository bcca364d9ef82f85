"""The release's number is one: pyproject.toml's version, what the installed ``profiles
--version`` prints, and the changelog's newest release heading."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


def test_the_installed_command_prints_the_projects_version():
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "profiles"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == f"profiles {VERSION}"


def test_the_changelogs_newest_release_is_the_projects_version():
    releases = re.findall(r"^## (\S+)", (REPO / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert releases[0] == VERSION, releases
