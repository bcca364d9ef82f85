"""The deployment's tests reuse the Dagster services of ``tests/orchestration``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestration"))
