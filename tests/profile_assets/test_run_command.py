"""``profiles run``: which days it runs, and what it refuses (runs themselves: tests/real_spark)."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from datetime import date

import pytest

from profile_assets.run_days import (
    LOCAL_INSTANCE,
    DayRun,
    PartitionOutOfRange,
    check_partitions,
    days_between,
    install_local_instance,
    run_days,
)

KEYS = ["2026-11-01", "2026-11-02", "2026-11-03"]


def test_a_range_is_every_day_from_first_to_last():
    assert days_between(date(2026, 11, 1), date(2026, 11, 3)) == [
        date(2026, 11, 1),
        date(2026, 11, 2),
        date(2026, 11, 3),
    ]


def test_a_range_that_ends_before_it_starts_is_refused():
    with pytest.raises(PartitionOutOfRange, match="LAST_DAY 2026-11-01 is before DAY 2026-11-03"):
        days_between(date(2026, 11, 3), date(2026, 11, 1))


def test_days_outside_the_partitions_are_named_with_the_setting_to_change():
    with pytest.raises(PartitionOutOfRange) as refused:
        check_partitions([date(2017, 11, 6), date(2026, 11, 2)], KEYS)
    message = str(refused.value)
    assert message.startswith(
        "2017-11-06: not a day partition (partitions: 2026-11-01 .. 2026-11-03)"
    )
    assert "PROFILES_START_DATE" in message


def test_the_command_refuses_a_day_before_the_first_partition_with_exit_2(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "run", "2017-11-06"],
        cwd=tmp_path,
        env={**os.environ, "PROFILES_START_DATE": "2026-11-01"},
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 2
    assert "2017-11-06: not a day partition" in completed.stderr
    assert not (tmp_path / ".dagster_home").exists()  # nothing created for a refused range


D1, D2, D3 = date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)


def _scripted(failures: dict[date, DayRun]):
    """A day runner answering from ``failures`` (every other day succeeds), recording the days
    it was asked to run."""
    asked: list[date] = []

    def run_day(day: date) -> DayRun:
        asked.append(day)
        return failures.get(day, DayRun(day, f"run-{day}"))

    return run_day, asked


def test_every_day_of_a_range_that_succeeds_runs_and_exits_0():
    run_day, asked = _scripted({})
    assert run_days([D1, D2, D3], run_day, keep_going=False, out=io.StringIO()) == 0
    assert asked == [D1, D2, D3]


def test_the_first_failed_day_stops_the_range_and_names_the_days_left_unrun():
    failure = DayRun(D1, "run-a", failed_checks=["raw_events_ids"])
    run_day, asked = _scripted({D1: failure})
    out = io.StringIO()
    assert run_days([D1, D2, D3], run_day, keep_going=False, out=out) == 1
    assert asked == [D1]
    lines = out.getvalue().splitlines()
    assert "2026-11-01: run run-a FAILED, check failed: raw_events_ids" in lines[1]
    assert lines[2].startswith("not run: 2026-11-02 .. 2026-11-03 (2 days)")
    assert "profiles run 2026-11-01 2026-11-03" in lines[2]


def test_keep_going_runs_every_day_and_lists_each_failed_day_with_its_steps_and_checks():
    failures = {
        D1: DayRun(D1, "run-a", succeeded=False, failed_steps=["audience_sketches"]),
        D3: DayRun(D3, "run-c", failed_checks=["raw_events_ids", "profiles_masters"]),
    }
    run_day, asked = _scripted(failures)
    out = io.StringIO()
    assert run_days([D1, D2, D3], run_day, keep_going=True, out=out) == 1
    assert asked == [D1, D2, D3]
    summary = out.getvalue().split("2 of 3 days failed:\n")[1].splitlines()
    assert summary == [
        "  2026-11-01: run run-a, step failed: audience_sketches",
        "  2026-11-03: run run-c, checks failed: raw_events_ids, profiles_masters",
    ]


def test_a_failure_on_the_last_day_names_no_unrun_days():
    run_day, _ = _scripted({D2: DayRun(D2, "run-b", failed_checks=["raw_events_ids"])})
    out = io.StringIO()
    assert run_days([D1, D2], run_day, keep_going=False, out=out) == 1
    assert "not run" not in out.getvalue()


def test_a_run_that_failed_before_any_step_is_a_failed_day():
    failure = DayRun(D1, "run-a", succeeded=False)
    assert failure.failed
    assert failure.failures() == "the run failed before any step (see its logs)"


@pytest.mark.jvm
def test_a_real_range_whose_first_day_fails_names_the_failed_step_and_the_unrun_day(tmp_path):
    not_a_lake = tmp_path / "not-a-lake"
    not_a_lake.write_text("a file where the lake's directory should be")
    # A home of its own (tmp_path/.dagster_home): `make test` exports the checkout's, which
    # `make demo` may have given an instance already, and the test's runs do not belong there.
    env = {name: value for name, value in os.environ.items() if name != "DAGSTER_HOME"}
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "run", "2026-11-01", "2026-11-02"],
        cwd=tmp_path,
        env={**env, "PROFILES_LAKE_ROOT": str(not_a_lake)},
        capture_output=True,
        text=True,
    )
    assert completed.returncode == 1
    assert "FAILED, step failed: raw_events" in completed.stdout
    assert "not run: 2026-11-02 (1 day)" in completed.stdout
    # A fresh home got the laptop instance: none of Dagster's banners about a missing one.
    assert "installed the laptop instance" in completed.stdout
    assert "No dagster instance configuration file" not in completed.stderr
    assert "telemetry" not in completed.stderr.lower()


def _day_line(outcome: DayRun) -> str:
    out = io.StringIO()
    run_days([outcome.day], lambda day: outcome, keep_going=False, out=out)
    return out.getvalue().splitlines()[1]


def test_a_day_whose_every_check_passed_on_something_says_so():
    assert "succeeded, every check passed" in _day_line(DayRun(D1, "run-a"))


def test_a_warned_check_is_named_in_the_day_line_never_beside_every_check_passed():
    outcome = DayRun(D1, "run-a", warned_checks=["identity_bridging_kinds"])
    line = _day_line(outcome)
    assert "every check passed" not in line
    assert "succeeded, 1 check warned: identity_bridging_kinds, the others passed" in line
    assert not outcome.failed  # a warning stops nothing: the range goes on, exit 0


def test_checks_with_nothing_to_judge_are_named_in_the_day_line():
    outcome = DayRun(
        D1, "run-a", unjudged_checks=["audience_estimation_error", "identity_quality_check"]
    )
    line = _day_line(outcome)
    assert "every check passed" not in line
    assert (
        "2 checks had nothing to judge: audience_estimation_error, identity_quality_check"
    ) in line


def test_a_fresh_dagster_home_gets_the_laptop_instance(tmp_path):
    said = install_local_instance(tmp_path)
    assert (tmp_path / "dagster.yaml").read_text() == LOCAL_INSTANCE.read_text()
    assert "one run at a time, telemetry off" in said


def test_a_dagster_home_with_its_own_instance_keeps_it(tmp_path):
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")
    install_local_instance(tmp_path)
    assert (tmp_path / "dagster.yaml").read_text() == "telemetry:\n  enabled: true\n"


def test_without_the_projects_instance_file_the_command_says_how(tmp_path):
    said = install_local_instance(tmp_path, template=tmp_path / "missing.yaml")
    assert not (tmp_path / "dagster.yaml").exists()
    assert "copy the project's examples/dagster.local.yaml there" in said
