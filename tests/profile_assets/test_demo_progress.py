"""The demo prints one line per finished asset and per finished check, as each finishes."""

from __future__ import annotations

import io

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetMaterialization,
    DagsterInstance,
    Definitions,
    MaterializeResult,
    asset,
    asset_check,
    define_asset_job,
)

from profile_assets.check_results import nothing_to_judge
from profile_assets.demo_progress import quarantine_note, run_partition, step_progress_logger


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


@asset_check(asset=sketches)
def answer_key() -> AssetCheckResult:
    return nothing_to_judge("no answer key at ground_truth/identities.parquet")


def lines_of(*checks) -> list[str]:
    out = io.StringIO()
    job = Definitions(
        assets=[events, sketches], asset_checks=list(checks), jobs=[define_asset_job("j")]
    ).resolve_job_def("j")
    job.with_logger_defs({"progress": step_progress_logger(out)}).execute_in_process(
        run_config={"loggers": {"progress": {}}}, raise_on_error=False
    )
    return out.getvalue().splitlines()


def test_a_warning_check_that_did_not_pass_prints_warned_with_why_not_failed():
    lines = lines_of(unused_kinds)
    warned = next(i for i, line in enumerate(lines) if "unused_kinds" in line)
    assert lines[warned].split()[2] == "WARNED"
    assert lines[warned + 1].strip() == "why: phone links nothing"
    assert not any("FAILED" in line for line in lines)


def test_a_check_with_nothing_to_judge_prints_unjudged_with_why():
    lines = lines_of(answer_key)
    unjudged = next(i for i, line in enumerate(lines) if "answer_key" in line)
    assert lines[unjudged].split()[2] == "unjudged"
    assert lines[unjudged + 1].strip() == (
        "why: nothing to judge: no answer key at ground_truth/identities.parquet"
    )


def test_a_run_outcome_names_the_checks_that_had_nothing_to_judge():
    job = Definitions(
        assets=[events, sketches], asset_checks=[answer_key], jobs=[define_asset_job("j")]
    ).resolve_job_def("j")
    outcome = run_partition(job, None, DagsterInstance.ephemeral())
    assert outcome["unjudged"] == {
        "answer_key": "nothing to judge: no answer key at ground_truth/identities.parquet"
    }
    assert outcome["checks"] == {"answer_key": True}


def test_quarantined_keys_are_noted_with_the_largest_named():
    note = quarantine_note(
        {
            "quarantined_keys": 2,
            "quarantined_by_reason": {"super_node": 1, "blocklisted": 1},
            "top_quarantined": [
                {"key_type": "member_id", "key": "guest", "reason": "super_node", "profiles": 683},
                {"key_type": "member_id", "key": "0", "reason": "blocklisted", "profiles": 12},
            ],
        }
    )
    assert note == (
        "note: 2 keys quarantined (blocklisted: 1, super_node: 1), "
        "e.g. member_id 'guest' (683 profiles), member_id '0' (12 profiles)"
    )


def test_no_quarantined_key_makes_no_note():
    assert quarantine_note({"quarantined_keys": 0}) is None
    assert quarantine_note({}) is None


@asset(check_specs=[AssetCheckSpec("carried_out", asset="erasure")])
def erasure(context) -> MaterializeResult:
    context.log_event(AssetMaterialization(asset_key="sketches", partition=None))
    return MaterializeResult(
        check_results=[AssetCheckResult(check_name="carried_out", passed=True)]
    )


def test_a_check_evaluated_in_its_assets_step_prints_under_the_assets_line():
    out = io.StringIO()
    job = Definitions(assets=[erasure], jobs=[define_asset_job("erase")]).resolve_job_def("erase")
    job.with_logger_defs({"progress": step_progress_logger(out)}).execute_in_process(
        run_config={"loggers": {"progress": {}}}
    )
    lines = out.getvalue().splitlines()
    assert [line.split()[:1] for line in lines] == [["erasure"], ["check"]]
    assert lines[0].endswith(" s")
    assert lines[1].split() == ["check", "carried_out", "passed"]


@asset
def activations(context) -> None:
    context.log.warning("audience 'Buyers' not activated: no clean events for the day before")


def one_warning_run(console_level: str | None) -> dict:
    job = Definitions(assets=[activations], jobs=[define_asset_job("warns")]).resolve_job_def(
        "warns"
    )
    levels = {} if console_level is None else {"console_level": console_level}
    return run_partition(job, None, DagsterInstance.ephemeral(), **levels)


def test_a_steps_warning_is_printed_by_default(capfd):
    one_warning_run(None)
    assert "not activated" in capfd.readouterr().err


def test_a_caller_that_reports_outcomes_itself_can_leave_the_warnings_to_its_report(capfd):
    outcome = one_warning_run("ERROR")
    printed = capfd.readouterr()
    assert outcome["success"] and "activations" in outcome["assets"]
    assert "not activated" not in printed.err + printed.out
