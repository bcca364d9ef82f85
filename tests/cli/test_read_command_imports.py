"""The read commands load only what their answer needs: no Spark, pandas, Arrow, Dagster or the
web stack (each costs a read command seconds of imports; ``bench/cli_latency.py`` times them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from known_profiles import A1

REPO = Path(__file__).resolve().parents[2]
NOT_NEEDED_BY_READS = {
    "pyspark",
    "pandas",
    "pyarrow",
    "dagster",
    "profile_assets",
    "fastapi",
    "starlette",
    "uvicorn",
    "great_expectations",
    "boto3",
    "confluent_kafka",
    "prometheus_client",
}
PROBE = """
import json, sys
from profile_store.cli.main import main
code = main(sys.argv[2:])
modules = sorted({name.split(".")[0] for name in sys.modules})
open(sys.argv[1], "w").write(json.dumps({"code": code, "modules": modules}))
"""


def imported_by(tmp_path: Path, *argv: str) -> set[str]:
    """The top-level packages a ``profiles`` command imports, after it answered (exit 0)."""
    report = tmp_path / "modules.json"
    completed = subprocess.run(
        [sys.executable, "-c", PROBE, str(report), *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    probed = json.loads(report.read_text())
    assert probed["code"] == 0, completed.stderr
    return set(probed["modules"])


@pytest.fixture
def audience_flags(gateway_settings) -> list[str]:
    return ["--hbase-host", gateway_settings.host, "--hbase-port", str(gateway_settings.port)]


@pytest.fixture
def profile_flags(profile_gateway) -> list[str]:
    return ["--hbase-host", profile_gateway.host, "--hbase-port", str(profile_gateway.port)]


def test_audience_estimate_imports_none_of_the_heavy_packages(tmp_path, audience_flags):
    query = tmp_path / "query.json"
    leaf = {"app_id": "com.shop", "event_type": "install"}
    query.write_text(json.dumps({**leaf, "date_from": "2026-11-01", "date_to": "2026-11-02"}))
    imported = imported_by(tmp_path, "audience", "estimate", str(query), "--json", *audience_flags)
    assert imported & NOT_NEEDED_BY_READS == set()


def test_profile_get_imports_none_of_the_heavy_packages(tmp_path, profile_flags):
    imported = imported_by(tmp_path, "profile", "get", A1, "--json", *profile_flags)
    assert imported & NOT_NEEDED_BY_READS == set()


def test_profile_segments_imports_none_of_the_heavy_packages(tmp_path, profile_flags):
    imported = imported_by(tmp_path, "profile", "segments", A1, "--json", *profile_flags)
    assert imported & NOT_NEEDED_BY_READS == set()
