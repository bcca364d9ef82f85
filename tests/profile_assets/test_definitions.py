"""The code location loads, and raw_events materializes a day end to end with its checks."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from dagster import DagsterInstance, materialize

from profile_assets.check_results import NOTHING_TO_JUDGE
from profile_assets.definitions import defs
from profile_assets.raw_events import raw_events
from profile_assets.raw_events_checks import raw_events_checks, rows_judged_from
from profile_store.lake.layout import SUCCESS_MARKER, landing_day
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

DAY = "2026-11-03"
REPO = Path(__file__).resolve().parents[2]


def landing_rows(count: int, bad: int = 0) -> list[str]:
    rows = [
        {
            "event_id": f"e{i}",
            "app_id": "com.shop",
            "user_id": f"u{i % 7}",
            "id_type": "gaid",
            "event_time": f"{DAY}T0{i % 10}:00:00.000Z",
            "event_type": "view_item",
            "event_attributes": {"color": "red"},
            "alt_ids": {},
        }
        for i in range(count)
    ]
    rows += [{"event_id": f"bad{i}", "event_time": "never"} for i in range(bad)]
    return [json.dumps(r) for r in rows]


def write_day(root, rows: list[str]) -> None:
    path = root / landing_day(DAY) / "part-00000.jsonl.gz"
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as out:
        out.write("\n".join(rows) + "\n")


def run_day(tmp_path):
    return materialize(
        [raw_events, *raw_events_checks],
        partition_key=DAY,
        resources={"spark": spark_resource_from_env({}), "lake": LakeResource(root=str(tmp_path))},
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )


def check_outcomes(result) -> dict[str, bool]:
    return {e.check_name: e.passed for e in result.get_asset_check_evaluations()}


def test_definitions_list_every_asset_and_check():
    repo = defs.get_repository_def()
    keys = {key.to_user_string() for key in repo.asset_graph.get_all_asset_keys()}
    assert "raw_events" in keys
    check_names = {key.name for key in repo.asset_graph.asset_check_keys}
    assert {
        "raw_events_schema",
        "raw_events_ids",
        "raw_events_time_in_day",
        "raw_events_event_type",
        "raw_events_quarantine_share",
    } <= check_names


def test_loading_the_code_location_leaves_great_expectations_unimported():
    """Every code server, run worker and ``dagster dev`` loads the location; GE's import costs
    seconds of CPU and only the raw_events checks need it."""
    probe = "import sys, profile_assets.definitions; print('great_expectations' in sys.modules)"
    completed = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "False"


def test_raw_events_materializes_a_day_and_its_checks_pass(spark, tmp_path):
    write_day(tmp_path, landing_rows(50))
    result = run_day(tmp_path)
    assert result.success
    materialization = result.asset_materializations_for_node("raw_events")[0]
    assert materialization.metadata["dagster/row_count"].value == 50
    assert materialization.partition == DAY
    assert all(check_outcomes(result).values())


def test_a_day_with_too_many_bad_rows_fails_the_quarantine_check(spark, tmp_path):
    write_day(tmp_path, landing_rows(50, bad=10))
    outcomes = check_outcomes(run_day(tmp_path))
    assert outcomes["raw_events_quarantine_share"] is False
    assert outcomes["raw_events_time_in_day"] is True


def test_the_quarantine_check_shows_its_percent_beside_its_bar(spark, tmp_path):
    write_day(tmp_path, landing_rows(50, bad=10))
    [evaluation] = [
        e
        for e in run_day(tmp_path).get_asset_check_evaluations()
        if e.check_name == "raw_events_quarantine_share"
    ]
    keys = list(evaluation.metadata)
    assert keys[:2] == ["quarantined_pct", "max_quarantined_pct"]
    assert evaluation.metadata["quarantined_pct"].value == round(10 / 60 * 100, 4)
    assert evaluation.metadata["max_quarantined_pct"].value == 2.0


def write_truncated_file(root, name: str, rows: list[str]) -> int:
    data = gzip.compress(("\n".join(rows) + "\n").encode())
    path = root / landing_day(DAY) / name
    path.write_bytes(data[: len(data) // 2])
    return len(data) // 2


def test_a_truncated_file_is_listed_in_the_metadata_and_the_day_materializes(spark, tmp_path):
    write_day(tmp_path, landing_rows(5_000))
    size = write_truncated_file(tmp_path, "part-00001.jsonl.gz", landing_rows(20))
    result = run_day(tmp_path)
    assert result.success
    metadata = result.asset_materializations_for_node("raw_events")[0].metadata
    assert metadata["dagster/row_count"].value == 5_000
    assert metadata["unreadable_files"].value == 1
    ((listed),) = metadata["unreadable_file_list"].value
    assert listed["path"] == f"{landing_day(DAY)}/part-00001.jsonl.gz"
    assert (listed["reason"], listed["bytes"]) == ("truncated_file", size)
    # A small share of the day's bytes: the quarantine check passes and downstream may run.
    assert check_outcomes(result)["raw_events_quarantine_share"] is True


def test_a_day_whose_files_are_mostly_unreadable_fails_the_quarantine_check(spark, tmp_path):
    write_day(tmp_path, landing_rows(50))
    for index in range(1, 4):
        write_truncated_file(tmp_path, f"part-0000{index}.jsonl.gz", landing_rows(2_000))
    [evaluation] = [
        e
        for e in run_day(tmp_path).get_asset_check_evaluations()
        if e.check_name == "raw_events_quarantine_share"
    ]
    assert evaluation.passed is False
    assert evaluation.metadata["quarantined_pct"].value == 0.0
    assert evaluation.metadata["unreadable_bytes_pct"].value > 50
    assert evaluation.metadata["unreadable_files"].value == 3


def quarantine_share_evaluation(result):
    [evaluation] = [
        e
        for e in result.get_asset_check_evaluations()
        if e.check_name == "raw_events_quarantine_share"
    ]
    return evaluation


def test_a_day_without_events_passes_its_checks_with_nothing_to_judge_but_its_schema(
    spark, tmp_path
):
    (tmp_path / landing_day(DAY)).mkdir(parents=True)
    (tmp_path / landing_day(DAY) / SUCCESS_MARKER).write_text("")
    result = run_day(tmp_path)
    assert result.success and all(check_outcomes(result).values())
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    unjudged = {name for name, e in evaluations.items() if NOTHING_TO_JUDGE in e.metadata}
    assert unjudged == set(evaluations) - {"raw_events_schema"}
    expected = f"nothing to judge: no clean events on {DAY}"
    assert evaluations["raw_events_ids"].description == expected


def test_a_few_lines_all_quarantined_are_too_few_to_judge_the_share(spark, tmp_path):
    write_day(tmp_path, landing_rows(0, bad=5))
    result = run_day(tmp_path)
    evaluation = quarantine_share_evaluation(result)
    assert evaluation.passed and result.success
    assert NOTHING_TO_JUDGE in evaluation.metadata
    assert evaluation.metadata["quarantined_pct"].value == 100.0
    assert evaluation.metadata["received_rows_judged_from"].value == 50


def test_a_share_is_judged_from_as_many_rows_as_one_bad_line_stays_within_the_limit():
    assert [rows_judged_from(share) for share in (0.02, 0.1, 0.3, 1.0, 0.0)] == [50, 10, 4, 1, 1]
