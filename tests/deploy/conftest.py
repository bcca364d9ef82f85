"""The deployment's tests reuse the Dagster services of ``tests/orchestration``, and share one
build of the image (the directory runs whole on one worker)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestration"))

from image_build import ImageToolsMissing, build_image  # noqa: E402


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> str:
    try:
        return build_image(tmp_path_factory.mktemp("image"))
    except ImageToolsMissing as missing:
        pytest.fail(str(missing), pytrace=False)
