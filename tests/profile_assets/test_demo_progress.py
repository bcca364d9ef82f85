"""The demo prints one line per finished asset and per finished check, as each finishes."""

from __future__ import annotations

import io

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    DagsterInstance,
    Definitions,
    asset,
    asset_check,
    define_asset_job,
)

from profile_assets.demo_progress import run_partition, step_progress_logger


@asset
def events() -> int:
    return 1


@asset
def sketches(events: int) -> int:
    return events + 1


@asset_check(asset=sketches)
def estimation_error() -> AssetCheckResult:
    return AssetCheckResult(passed=False, description="mean error 9.3% > 3%")


def progress_of_one_run() -> list[str]:
    out = io.StringIO()
    job = Definitions(
        assets=[events, sketches],
        asset_checks=[estimation_error],
        jobs=[define_asset_job("two_assets")],
    ).resolve_job_def("two_assets")
    job.with_logger_defs({"progress": step_progress_logger(out)}).execute_in_process(
        run_config={"loggers": {"progress": {}}}, raise_on_error=False
    )
    return out.getvalue().splitlines()


def test_each_asset_and_each_check_prints_one_line_with_its_seconds_in_finishing_order():
    lines = [line for line in progress_of_one_run() if "why:" not in line]
    assert [line.split()[:-2] for line in lines] == [
        ["events"],
        ["sketches"],
        ["check", "estimation_error", "FAILED"],
    ]
    for line in lines:
        *_, seconds, unit = line.split()
        assert unit == "s" and float(seconds) >= 0


def test_a_failed_check_says_why_under_its_line():
    lines = progress_of_one_run()
    failed = next(i for i, line in enumerate(lines) if "FAILED" in line)
    assert lines[failed + 1].strip() == "why: mean error 9.3% > 3%"


@asset_check(asset=sketches)
def unused_kinds() -> AssetCheckResult:
    return AssetCheckResult(
        passed=False, severity=AssetCheckSeverity.WARN, description="phone links nothing"
    )


def outcome_of_one_run() -> dict:
    job = Definitions(
        assets=[events, sketches],
        asset_checks=[estimation_error, unused_kinds],
        jobs=[define_asset_job("two_assets")],
    ).resolve_job_def("two_assets")
    return run_partition(job, None, DagsterInstance.ephemeral())


def test_a_warning_check_is_reported_apart_and_does_not_count_as_a_failed_check():
    outcome = outcome_of_one_run()
    assert outcome["warnings"] == {"unused_kinds": "phone links nothing"}
    assert outcome["checks"] == {"estimation_error": False}
