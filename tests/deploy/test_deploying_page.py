"""``docs/deploying.md`` holds together with the tests that run its steps: every numbered step
names a test that exists, and the page builds and runs the image of the package's version."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "deploying.md"
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
STEP = re.compile(r"^(\d+)\. \*\*", re.MULTILINE)
NAMED_TEST = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


def steps(text: str) -> list[tuple[int, str]]:
    """Each numbered step's number and text (up to the next step or heading)."""
    starts = list(STEP.finditer(text))
    found = []
    for index, start in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(text)
        body = text[start.start() : end].split("\n## ", 1)[0]
        found.append((int(start.group(1)), body))
    return found


def test_the_steps_are_numbered_one_after_the_other():
    numbers = [number for number, _ in steps(PAGE.read_text())]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 10, numbers


def test_every_step_names_a_test_that_exists():
    for number, body in steps(PAGE.read_text()):
        named = NAMED_TEST.findall(body)
        assert named, f"step {number} names no test"
        for path, name in named:
            source = REPO / path
            assert source.exists(), f"step {number}: no {path}"
            assert re.search(rf"^def {name}\(", source.read_text(), re.MULTILINE), (
                f"step {number}: no test {name} in {path}"
            )


def test_the_page_builds_and_runs_the_image_of_the_packages_version():
    text = PAGE.read_text()
    tags = set(re.findall(r"localhost/adtech-profiles(?:-dev)?:([\w.]+)", text))
    assert tags == {VERSION}, tags
