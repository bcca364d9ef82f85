"""The Dagster UI as `make ui` opens it (``profile_assets.local_ui``): partitions from the lake's
first day, the job page's automation tag in agreement with the automation sensor, no first-run
pop-up, and an asset list whose status column shows what the instance holds as built; checked
over GraphQL and in Debian's chromium."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest
from dagster import AssetMaterialization, DagsterInstance
from playwright.sync_api import sync_playwright
from system_requirements import chromium
from webserver_wait import free_port, graphql, wait_until_answering

from profile_assets.definitions import defs
from profile_assets.demo import default_start
from profile_assets.local_ui import first_landing_day, with_lake_start_date
from profile_store.lake.storage import LocalLakeStorage

REPO = Path(__file__).resolve().parents[2]
LAKE_DAYS = 3


def landing_file(lake: Path, day: date) -> None:
    folder = lake / "landing" / f"date={day.isoformat()}"
    folder.mkdir(parents=True)
    with gzip.open(folder / "part-00000.jsonl.gz", "wt") as out:
        out.write(json.dumps({"event_id": f"e-{day}", "event_type": "install"}) + "\n")


def test_the_first_landing_day_is_the_oldest_day_folder_with_a_file(tmp_path):
    for day in (date(2026, 11, 3), date(2026, 11, 2)):
        landing_file(tmp_path, day)
    (tmp_path / "landing" / "date=2026-10-01").mkdir()  # empty: no data
    assert first_landing_day(LocalLakeStorage(tmp_path)) == date(2026, 11, 2)


def test_an_unset_start_date_becomes_the_lakes_first_day(tmp_path):
    landing_file(tmp_path, date(2026, 11, 2))
    env = with_lake_start_date({"PROFILES_LAKE_ROOT": str(tmp_path)})
    assert env["PROFILES_START_DATE"] == "2026-11-02"


def test_a_start_date_set_by_the_user_is_kept(tmp_path):
    landing_file(tmp_path, date(2026, 11, 2))
    env = {"PROFILES_LAKE_ROOT": str(tmp_path), "PROFILES_START_DATE": "2026-01-01"}
    assert with_lake_start_date(env)["PROFILES_START_DATE"] == "2026-01-01"


def test_the_demos_days_end_yesterday():
    assert default_start(5, today=date(2026, 11, 26)) == date(2026, 11, 21)


def record_built(home: Path, days: list[date]) -> None:
    """Every daily asset recorded as materialized on ``days`` in the instance at ``home``,
    upstream first (as a run of the demo leaves them: nothing for automation to request)."""
    graph = defs.get_repository_def().asset_graph
    daily = [key for key in graph.toposorted_asset_keys if graph.get(key).is_partitioned]
    with DagsterInstance.from_config(str(home)) as instance:
        for key in daily:
            for day in days:
                instance.report_runless_asset_event(
                    AssetMaterialization(key, partition=day.isoformat())
                )


@pytest.fixture(scope="module")
def local_ui(tmp_path_factory):
    """`make ui`'s command over a lake of LAKE_DAYS landing days ending yesterday (no
    ``_SUCCESS`` markers, so the landing sensor launches no run), every daily asset recorded as
    built on them, on a free port."""
    home = tmp_path_factory.mktemp("dagster_home")
    shutil.copy(REPO / "examples" / "dagster.local.yaml", home / "dagster.yaml")
    lake = tmp_path_factory.mktemp("lake")
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    days = [yesterday - timedelta(days=offset) for offset in reversed(range(LAKE_DAYS))]
    for day in days:
        landing_file(lake, day)
    record_built(home, days)
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "PROFILES_LAKE_ROOT": str(lake)}
    env.pop("PROFILES_START_DATE", None)
    env["PROFILES_HBASE_DATA_DIR"] = str(tmp_path_factory.mktemp("hbase"))
    command = [sys.executable, "-m", "profile_assets.local_ui", "-w", "workspace.yaml"]
    log = (home / "ui.log").open("w")
    process = subprocess.Popen(
        [*command, "-h", "127.0.0.1", "-p", str(port)],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(process, url, home / "ui.log", timeout_s=240)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # dagster dev, its webserver and daemon
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


PARTITIONS = """
query {
  assetNodeOrError(assetKey: {path: ["raw_events"]}) {
    ... on AssetNode { partitionKeys }
  }
}
"""


def test_the_partitions_start_at_the_lakes_first_day(local_ui):
    keys = graphql(local_ui, PARTITIONS)["assetNodeOrError"]["partitionKeys"]
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    first = yesterday - timedelta(days=LAKE_DAYS - 1)
    assert keys[0] == first.isoformat()
    assert len(keys) == LAKE_DAYS


def test_the_automation_tag_agrees_with_the_running_automation_sensor(local_ui):
    state = graphql(local_ui, "query { instance { autoMaterializePaused } }")
    assert state["instance"]["autoMaterializePaused"] is False


@contextlib.contextmanager
def assets_page(url: str):
    """The UI's asset list in Debian's chromium."""
    with sync_playwright() as driver:
        browser = driver.chromium.launch(
            executable_path=chromium(), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{url}/assets")
            yield page
        finally:
            browser.close()


def test_the_ui_opens_without_the_first_run_pop_up(local_ui):
    assert graphql(local_ui, "query { shouldShowNux }")["shouldShowNux"] is False
    with assets_page(local_ui) as page:
        page.get_by_text("raw_events").first.wait_for(timeout=120_000)
        assert page.locator("[role=dialog]").count() == 0


def status_cells(page, asset: str) -> list[str]:
    """The asset list's status column for ``asset``: materialized, missing, failed and
    in-progress counts, then "N partitions" (or "Never materialized")."""
    name = page.get_by_text(asset, exact=True).first
    row = name.locator(
        "xpath=ancestor::*[contains(., 'profile_assets.definitions') and "
        "(contains(., 'partitions') or contains(., 'materialized'))][1]"
    )
    lines = row.inner_text().splitlines()
    return lines[lines.index("profile_assets.definitions") + 3 :]


def test_the_asset_list_shows_every_daily_asset_built_on_every_day(local_ui):
    graph = defs.get_repository_def().asset_graph
    daily = sorted(
        key.to_user_string() for key in graph.get_all_asset_keys() if graph.get(key).is_partitioned
    )
    with assets_page(local_ui) as page:
        page.get_by_text(f"{LAKE_DAYS} partitions").first.wait_for(timeout=120_000)
        shown = {asset: status_cells(page, asset) for asset in daily}
        # materialized: all; missing, failed, in progress: none
        expected = ["All", "0", "0", "0", f"{LAKE_DAYS} partitions"]
        assert shown == dict.fromkeys(daily, expected)
        target = os.environ.get("BUILDER_SCREENSHOTS")
        if target:
            page.screenshot(path=str(Path(target) / "dagster-assets.png"))
