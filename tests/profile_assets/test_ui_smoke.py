"""The Dagster UI as a user opens it: the webserver over workspace.yaml, asked over GraphQL.

Starts ``dagster-webserver`` from the repository root on a free port (temporary DAGSTER_HOME,
lake and HBase directories), then checks that every asset, asset check, sensor and schedule of
the code location is listed (the landing and automation sensors on), that the instance configs'
one-run-at-a-time limit names this location, and that the landing sensor evaluates (a dry run)
to a run request for a day whose files are complete.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest
import yaml
from webserver_wait import dagster_webserver, graphql

from profile_assets.definitions import defs

REPO = Path(__file__).resolve().parents[2]
DAY = "2026-11-03"

WORKSPACE_QUERY = """
query {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        locationOrLoadError {
          __typename
          ... on PythonError { message }
          ... on RepositoryLocation {
            repositories {
              name
              sensors { name sensorState { status } }
              schedules { name scheduleState { status } }
              assetNodes {
                assetKey { path }
                assetChecksOrError { ... on AssetChecks { checks { name } } }
              }
            }
          }
        }
      }
    }
  }
}
"""

DRY_RUN = """
mutation ($selector: SensorSelector!, $cursor: String) {
  sensorDryRun(selectorData: $selector, cursor: $cursor) {
    __typename
    ... on PythonError { message }
    ... on DryRunInstigationTick {
      evaluationResult {
        skipReason
        error { message }
        runRequests { runKey tags { key value } }
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def webserver(tmp_path_factory):
    home = tmp_path_factory.mktemp("dagster_home")
    lake = tmp_path_factory.mktemp("lake")
    landing = lake / "landing" / f"date={DAY}"
    landing.mkdir(parents=True)
    with gzip.open(landing / "part-00000.jsonl.gz", "wt") as out:
        out.write(json.dumps({"event_id": "e1", "event_type": "install"}) + "\n")
    (landing / "_SUCCESS").write_text("")
    env = {
        **os.environ,
        "PROFILES_LAKE_ROOT": str(lake),
        "PROFILES_HBASE_DATA_DIR": str(tmp_path_factory.mktemp("hbase")),
    }
    with dagster_webserver(home, env) as url:
        yield url


@pytest.fixture(scope="module")
def location(webserver):
    workspace = graphql(webserver, WORKSPACE_QUERY)["workspaceOrError"]
    assert workspace["__typename"] == "Workspace"
    (entry,) = workspace["locationEntries"]
    loaded = entry["locationOrLoadError"]
    assert loaded["__typename"] == "RepositoryLocation", loaded
    (repository,) = loaded["repositories"]
    return entry["name"], repository


def test_the_ui_lists_every_asset_and_asset_check(location):
    _, repository = location
    graph = defs.get_repository_def().asset_graph
    expected_assets = {key.to_user_string() for key in graph.get_all_asset_keys()}
    expected_checks = {key.name for key in graph.asset_check_keys}
    nodes = repository["assetNodes"]
    assert {"/".join(node["assetKey"]["path"]) for node in nodes} == expected_assets
    checks = {
        check["name"]
        for node in nodes
        for check in (node["assetChecksOrError"] or {}).get("checks", [])
    }
    assert checks == expected_checks


def test_the_landing_and_automation_sensors_are_on_and_the_schedule_listed(location):
    _, repository = location
    sensors = {s["name"]: s["sensorState"]["status"] for s in repository["sensors"]}
    schedules = {s["name"]: s["scheduleState"]["status"] for s in repository["schedules"]}
    assert sensors == {
        "landing_sensor": "RUNNING",
        "automation_sensor": "RUNNING",
        "erasure_sensor": "RUNNING",
        "event_stream_sensor": "RUNNING",
    }
    assert set(schedules) == {"daily_pipeline_schedule", "erasure_job_schedule"}


def test_the_run_limit_of_the_instance_configs_names_this_location(location):
    location_name, _ = location
    for name in ("dagster.local.yaml", "dagster.yaml"):
        config = yaml.safe_load((REPO / "examples" / name).read_text())
        (limit,) = config["concurrency"]["runs"]["tag_concurrency_limits"]
        assert (limit["key"], limit["value"]) == ("dagster/code_location", location_name), name


def test_a_sensor_dry_run_requests_the_day_whose_files_are_complete(webserver, location):
    location_name, repository = location
    selector = {
        "repositoryLocationName": location_name,
        "repositoryName": repository["name"],
        "sensorName": "landing_sensor",
    }
    tick = graphql(webserver, DRY_RUN, {"selector": selector, "cursor": None})["sensorDryRun"]
    assert tick["__typename"] == "DryRunInstigationTick", tick
    result = tick["evaluationResult"]
    assert result["error"] is None
    (request,) = result["runRequests"]
    tags = {tag["key"]: tag["value"] for tag in request["tags"]}
    assert tags["dagster/partition"] == DAY
