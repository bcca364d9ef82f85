"""``audience_estimation_error`` on real sketches: small sketches fail it, healthy ones pass it.

One lake of two days (about 11,000 viewers and 5,000 cart users a day) built twice: at lg_k 8
(k = 256: a relative standard error of about 6%, twice the 3% bar) and at lg_k 12, each into
its own embedded HBase.
"""

from __future__ import annotations

import gzip
import json
import random
import re

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
from profile_store.lake.layout import landing_day
from resources.hbase import HBaseResource
from resources.lake import LakeResource
from resources.spark import spark_resource_from_env

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


def build(lake_root, hbase, lg_k: int, assets=(raw_events, attribute_stats, trimmed_attributes)):
    instance = DagsterInstance.ephemeral()
    for day in DAYS:
        result = materialize(
            [*assets, audience_sketches],
            partition_key=day,
            resources=resources(lake_root, hbase),
            instance=instance,
            run_config={"ops": {"audience_sketches": {"config": {"lg_k": lg_k}}}},
        )
        assert result.success


def check(lake_root, hbase, **config):
    """The check's evaluation on the last day (a window of both days), over the sketches the
    module's fixture built (the check alone: it reads them from HBase)."""
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
        tags={"dagster/partition": DAYS[-1]},
        instance=DagsterInstance.ephemeral(),
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


def metadata(evaluation) -> dict:
    return {key: value.value for key, value in evaluation.metadata.items()}


def test_small_sketches_fail_the_check_naming_the_missed_figures(lake_root, small_sketches):
    evaluation = check(lake_root, small_sketches)
    assert not evaluation.passed
    assert evaluation.severity == AssetCheckSeverity.ERROR
    missed = evaluation.description.split(" -- ")[0]
    assert re.fullmatch(r"estimation-mode answers \(\d+\): .+ [<>] \d+%", missed.split("; ")[0])
    assert metadata(evaluation)["estimation_mode_mean_answer_error_pct"] > 3


def test_too_few_estimation_mode_answers_beyond_the_bars_are_a_warning(lake_root, small_sketches):
    evaluation = check(lake_root, small_sketches, min_estimation_answers=1000)
    assert not evaluation.passed
    assert evaluation.severity == AssetCheckSeverity.WARN
    assert "too few to judge (from 1000)" in evaluation.description
    assert re.match(r"estimation-mode answers \(\d+\): .+ [<>] \d+%", evaluation.description)


def test_healthy_sketches_pass_the_check(lake_root, healthy_sketches):
    evaluation = check(lake_root, healthy_sketches)
    assert evaluation.passed, evaluation.description
    found = metadata(evaluation)
    assert found["estimation_mode_answers"] >= 20
    assert found["estimation_mode_mean_error_pct"] <= 3
    assert evaluation.description.startswith(
        f"estimation-mode answers ({found['estimation_mode_answers']}): mean error "
    )


def test_the_check_seeks_estimating_trees_when_its_mix_has_too_few(lake_root, healthy_sketches):
    evaluation = check(lake_root, healthy_sketches, queries=5, estimation_answers_sought=40)
    found = metadata(evaluation)
    assert found["estimation_mode_answers"] == 40
    assert found["estimation_mode_sought"] >= 35
    assert found["queries"] == 5 + found["estimation_mode_sought"]


def test_each_judged_figure_stands_beside_its_limit_in_a_table(lake_root, healthy_sketches):
    table = metadata(check(lake_root, healthy_sketches, queries=5))["accuracy_bars"]
    rows = {(r.data["answers"], r.data["figure"]): r.data for r in table.records}
    mean = rows[("estimation mode", "mean error")]
    assert mean["limit_pct"] == 3 and mean["met"] == (mean["value_pct"] <= 3)
    assert rows[("estimation mode", "95% bounds coverage")]["limit_pct"] == 93
    assert rows[("exact mode", "exact-mode max error")]["limit_pct"] == 0
