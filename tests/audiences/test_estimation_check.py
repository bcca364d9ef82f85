"""``audience_estimation_error`` on real sketches: small sketches fail it, healthy ones pass it.

Two lakes, each built twice, at lg_k 8 (k = 256: a relative standard error of about 6%, twice
the 3% bar) and at a healthy size, each build into its own embedded HBase: one of two days
(about 11,000 viewers and 5,000 cart users a day), and a day of the project's generator (four
apps, 100,000 events), where the check once passed lg_k 8 on errors relative to the operand.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import shutil
from datetime import date

import pytest
from dagster import (
    AssetCheckSeverity,
    AssetSelection,
    DagsterInstance,
    Definitions,
    define_asset_job,
    materialize,
)

from profile_assets.audience_assets import attribute_stats, audience_sketches, trimmed_attributes
from profile_assets.audience_checks import audience_estimation_error
from profile_assets.partitions import daily_partitions
from profile_assets.raw_events import raw_events
from profile_store.generator import generate_lake
from profile_store.lake.layout import AUDIENCE_LEAF_COUNTS, landing_day
from resources.hbase import HBaseResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

# Every test reads days the pipeline built on Spark (the module's fixtures materialize them).
pytestmark = pytest.mark.jvm

DAYS = ("2026-11-01", "2026-11-02")
USERS = 12_000
COLORS = ("red", "blue", "green", "black", "white")


def landing_rows(day: str, seed: int) -> list[str]:
    rng = random.Random(seed)
    rows = []
    for i in range(USERS * 3):
        user = rng.randrange(USERS)
        event = rng.choices(("view", "cart", "buy"), weights=(70, 20, 10))[0]
        attributes = {"color": COLORS[user % 5], "size": rng.choice("SML")}
        rows.append(
            json.dumps(
                {
                    "event_id": f"{day}-{i}",
                    "app_id": "com.shop",
                    "user_id": f"dev-{user}",
                    "id_type": "gaid",
                    "event_time": f"{day}T{rng.randrange(24):02d}:00:00.000Z",
                    "event_type": event,
                    "event_attributes": attributes,
                    "alt_ids": {},
                }
            )
        )
    return rows


@pytest.fixture(scope="module")
def lake_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("lake")
    for seed, day in enumerate(DAYS):
        path = root / landing_day(day) / "part-00000.jsonl.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(path, "wt") as out:
            out.write("\n".join(landing_rows(day, seed)) + "\n")
    return root


def resources(lake_root, hbase) -> dict:
    return {
        "spark": spark_resource_from_env({}),
        "lake": LakeResource(root=str(lake_root)),
        "hbase": hbase,
    }


def build(
    lake_root,
    hbase,
    lg_k: int | None,
    assets=(raw_events, attribute_stats, trimmed_attributes),
    days=DAYS,
):
    """``days`` of sketches at ``lg_k`` (None: the asset's default) into ``hbase``."""
    instance = DagsterInstance.ephemeral()
    config = {} if lg_k is None else {"lg_k": lg_k}
    for day in days:
        result = materialize(
            [*assets, audience_sketches],
            partition_key=day,
            resources=resources(lake_root, hbase),
            instance=instance,
            run_config={"ops": {"audience_sketches": {"config": config}}},
        )
        assert result.success


def check(lake_root, hbase, day=DAYS[-1], instance=None, **config):
    """The check's evaluation on ``day`` (a window of the built days up to it), over the
    sketches a module fixture built (the check alone: it reads them from HBase)."""
    job = define_asset_job(
        "the_check_alone",
        selection=AssetSelection.checks(audience_estimation_error),
        partitions_def=daily_partitions,
    )
    location = Definitions(
        assets=[audience_sketches],
        asset_checks=[audience_estimation_error],
        jobs=[job],
        resources=resources(lake_root, hbase),
    )
    result = location.resolve_job_def(job.name).execute_in_process(
        # As a tag: Dagster finds no partitions in a selection of checks alone.
        tags={"dagster/partition": day},
        instance=instance or DagsterInstance.ephemeral(),
        # A check's op is named after its asset and itself.
        run_config={"ops": {"audience_sketches_audience_estimation_error": {"config": config}}},
        raise_on_error=False,
    )
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation


def hbase_resource(tmp_path_factory) -> HBaseResource:
    return HBaseResource(data_dir=str(tmp_path_factory.mktemp("hbase")))


@pytest.fixture(scope="module")
def small_sketches(lake_root, tmp_path_factory):
    hbase = hbase_resource(tmp_path_factory)
    build(lake_root, hbase, lg_k=8)
    yield hbase
    hbase.close()


@pytest.fixture(scope="module")
def healthy_sketches(lake_root, tmp_path_factory, small_sketches):
    """The same lake's sketches at lg_k 12 (its events are in the lake already)."""
    hbase = hbase_resource(tmp_path_factory)
    build(lake_root, hbase, lg_k=12, assets=())
    yield hbase
    hbase.close()


GENERATED_DAY = "2026-11-01"


@pytest.fixture(scope="module")
def generated_root(tmp_path_factory):
    """A day of the project's generator: four apps, a few (app, event type) pairs past lg_k 12's
    4,096 users and most past lg_k 8's 256."""
    root = tmp_path_factory.mktemp("generated")
    generate_lake(root, 1, 100_000, seed=7, start_date=date.fromisoformat(GENERATED_DAY))
    return root


@pytest.fixture(scope="module")
def generated_small_sketches(generated_root, tmp_path_factory):
    hbase = hbase_resource(tmp_path_factory)
    build(generated_root, hbase, lg_k=8, days=(GENERATED_DAY,))
    yield hbase
    hbase.close()


@pytest.fixture(scope="module")
def generated_default_sketches(generated_root, tmp_path_factory, generated_small_sketches):
    """The same day's sketches at the asset's default size (its events are in the lake)."""
    hbase = hbase_resource(tmp_path_factory)
    build(generated_root, hbase, lg_k=None, assets=(), days=(GENERATED_DAY,))
    yield hbase
    hbase.close()


def metadata(evaluation) -> dict:
    return {key: value.value for key, value in evaluation.metadata.items()}


ANSWER_MISS = r"estimation-mode answers relative to the answer \(\d+\): .+ [<>] \d+%"


def test_small_sketches_fail_the_check_naming_the_missed_figures(lake_root, small_sketches):
    evaluation = check(lake_root, small_sketches)
    assert not evaluation.passed
    assert evaluation.severity == AssetCheckSeverity.ERROR
    missed = evaluation.description.split(" -- ")[0]
    assert re.fullmatch(ANSWER_MISS, missed.split("; ")[0])
    found = metadata(evaluation)
    assert found["estimation_mode_answer_mean_error_pct"] > found["max_answer_mean_error_pct"]


def test_too_few_estimation_mode_answers_beyond_the_bars_are_a_warning(lake_root, small_sketches):
    evaluation = check(lake_root, small_sketches, min_estimation_answers=1000)
    assert not evaluation.passed
    assert evaluation.severity == AssetCheckSeverity.WARN
    assert "too few to judge (from 1000)" in evaluation.description
    assert re.match(ANSWER_MISS, evaluation.description)


def test_healthy_sketches_pass_the_check(lake_root, healthy_sketches):
    evaluation = check(lake_root, healthy_sketches)
    assert evaluation.passed, evaluation.description
    found = metadata(evaluation)
    assert found["estimation_mode_judged_to_answer"] >= 20
    assert found["estimation_mode_answer_mean_error_pct"] <= 3
    assert evaluation.description.startswith(
        f"estimation-mode answers ({found['estimation_mode_answers']}): relative to the answer, "
        f"the {found['estimation_mode_judged_to_answer']} of at least 100 users"
    )


def test_sketches_at_lg_k_8_of_generated_traffic_fail_relative_to_the_answer(
    generated_root, generated_small_sketches
):
    evaluation = check(generated_root, generated_small_sketches, day=GENERATED_DAY)
    assert not evaluation.passed
    assert evaluation.severity == AssetCheckSeverity.ERROR
    missed = evaluation.description.split(" -- ")[0].split("; ")
    assert any(re.fullmatch(ANSWER_MISS, figure) for figure in missed), missed
    assert metadata(evaluation)["estimation_mode_judged_to_answer"] >= 20


def test_sketches_of_the_default_size_of_generated_traffic_pass(
    generated_root, generated_default_sketches
):
    evaluation = check(generated_root, generated_default_sketches, day=GENERATED_DAY)
    assert evaluation.passed, evaluation.description
    found = metadata(evaluation)
    assert found["estimation_mode_judged_to_answer"] >= 20
    assert found["estimation_mode_answer_mean_error_pct"] <= found["max_answer_mean_error_pct"]


def test_the_check_seeks_estimating_trees_when_its_mix_has_too_few(lake_root, healthy_sketches):
    evaluation = check(lake_root, healthy_sketches, queries=5, estimation_answers_sought=40)
    found = metadata(evaluation)
    assert found["estimation_mode_answers"] == 40
    assert found["estimation_mode_sought"] >= 35
    assert found["queries"] == 5 + found["estimation_mode_sought"]


@pytest.fixture(scope="module")
def judged_days(lake_root, healthy_sketches):
    """The check on each day in turn, in one instance (which records each evaluation), with a
    mix of 5 trees and the sought ones."""
    instance = DagsterInstance.ephemeral()
    return [check(lake_root, healthy_sketches, day, instance, queries=5) for day in DAYS]


def test_each_judged_figure_stands_beside_its_limit_in_a_table(judged_days):
    table = metadata(judged_days[-1])["accuracy_bars"]
    rows = {(r.data["answers"], r.data["figure"]): r.data for r in table.records}
    mean = rows[("estimation mode", "mean error relative to the answer")]
    assert mean["limit_pct"] == 3 and mean["met"] == (mean["value_pct"] <= 3)
    assert mean["relative_to"] == "answer"
    operand = rows[("estimation mode", "mean error relative to the operand")]
    assert operand["limit_pct"] == 3 and operand["count"] >= mean["count"]
    assert rows[("estimation mode", "95% bounds coverage")]["limit_pct"] == 93
    assert rows[("exact mode", "exact-mode max error")]["limit_pct"] == 0


def test_the_day_s_figures_are_numbers_each_followed_by_its_limit(judged_days):
    found = metadata(judged_days[-1])
    keys = list(found)
    for value, limit in (
        ("estimation_mode_answer_mean_error_pct", "max_answer_mean_error_pct"),
        ("estimation_mode_operand_mean_error_pct", "max_operand_mean_error_pct"),
        ("estimation_mode_bounds_hold_pct", "min_bounds_hold_pct"),
    ):
        assert keys.index(limit) == keys.index(value) + 1
        assert isinstance(found[value], float) and isinstance(found[limit], float)


def test_the_error_histogram_is_a_table_of_the_estimation_mode_answers(judged_days):
    found = metadata(judged_days[-1])
    bins = [r.data for r in found["error_histogram"].records]
    assert bins[0]["error"] == "0-0.5%" and bins[-1]["error"] == ">= 20%"
    assert sum(b["answers"] for b in bins) == found["estimation_mode_judged_to_answer"]
    assert sum(b["answers_to_operand"] for b in bins) == found["estimation_mode_answers"]


def test_each_day_of_the_window_is_counted_from_its_events_once(lake_root, healthy_sketches):
    shutil.rmtree(lake_root / AUDIENCE_LEAF_COUNTS, ignore_errors=True)
    first = check(lake_root, healthy_sketches, DAYS[0], queries=5)
    second = check(lake_root, healthy_sketches, DAYS[1], queries=5)
    again = check(lake_root, healthy_sketches, DAYS[1], queries=5)
    assert [metadata(e)["days_counted"] for e in (first, second, again)] == [1, 1, 0]
    assert metadata(again)["queries"] == metadata(second)["queries"]
    assert again.passed == second.passed


def test_a_window_of_one_day_has_no_table_of_days(judged_days):
    assert "accuracy_by_day" not in judged_days[0].metadata


def test_the_days_of_the_window_stand_in_a_table_as_each_was_judged(judged_days):
    rows = [r.data for r in metadata(judged_days[-1])["accuracy_by_day"].records]
    assert [r["day"] for r in rows] == list(DAYS)
    for row, evaluation in zip(rows, judged_days, strict=True):
        found = metadata(evaluation)
        assert row["passed"] == evaluation.passed
        assert row["mean_error_pct"] == found["estimation_mode_answer_mean_error_pct"]
        assert row["limit_pct"] == found["max_answer_mean_error_pct"] == 3
        assert row["met"] == (row["mean_error_pct"] <= row["limit_pct"])
