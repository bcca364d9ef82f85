"""The read commands load only what their answer needs: no Spark, pandas, Arrow, Dagster or the
web stack (each costs a read command seconds of imports; ``bench/cli_latency.py`` times them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from known_profiles import A1

from profile_store.hbase.pool import hbase_pool
from profile_store.hbase.settings import HBaseSettings

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
INSTALLS = {
    "app_id": "com.shop",
    "event_type": "install",
    "date_from": "2026-11-01",
    "date_to": "2026-11-02",
}
PROBE = """
import json, sys
from profile_store.cli.main import main
code = main(sys.argv[2:])
modules = sorted(sys.modules)
open(sys.argv[1], "w").write(json.dumps({"code": code, "modules": modules}))
"""


GATEWAY_SERVER = {
    f"profile_store.hbase_gateway.{module}"
    for module in ("store", "server", "handler", "workers", "metrics", "catalog", "pending")
}
"""What the embedded gateway's own process runs; a command that starts it needs none of it."""


def imported_by(tmp_path: Path, *argv: str) -> set[str]:
    """The top-level packages a ``profiles`` command imports, after it answered (exit 0)."""
    return {name.split(".")[0] for name in modules_of(tmp_path, *argv)}


def modules_of(tmp_path: Path, *argv: str) -> set[str]:
    """Every module a ``profiles`` command imports, after it answered (exit 0)."""
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
    query.write_text(json.dumps(INSTALLS))
    imported = imported_by(tmp_path, "audience", "estimate", str(query), "--json", *audience_flags)
    assert imported & NOT_NEEDED_BY_READS == set()


def test_profile_get_imports_none_of_the_heavy_packages(tmp_path, profile_flags):
    imported = imported_by(tmp_path, "profile", "get", A1, "--json", *profile_flags)
    assert imported & NOT_NEEDED_BY_READS == set()


def test_profile_segments_imports_none_of_the_heavy_packages(tmp_path, profile_flags):
    imported = imported_by(tmp_path, "profile", "segments", A1, "--json", *profile_flags)
    assert imported & NOT_NEEDED_BY_READS == set()


def test_audience_estimate_starting_its_gateway_loads_none_of_the_gateways_own_code(
    tmp_path, fill_sketch_table, monkeypatch
):
    monkeypatch.delenv("HBASE_THRIFT_HOST", raising=False)
    data_dir = tmp_path / "hbase"
    with hbase_pool(HBaseSettings(data_dir=str(data_dir))) as pool, pool.connection() as conn:
        fill_sketch_table(conn)
    query = tmp_path / "query.json"
    query.write_text(json.dumps(INSTALLS))
    flags = ["--json", "--hbase-data-dir", str(data_dir)]
    imported = modules_of(tmp_path, "audience", "estimate", str(query), *flags)
    assert "profile_store.hbase_gateway.process" in imported  # it did start the gateway
    assert imported & GATEWAY_SERVER == set()
