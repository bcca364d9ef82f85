"""The demo's real-time act (``profile_assets/live_demo.py``) against the real broker, a real
embedded gateway holding a small compacted day and the real ``profiles stream live-profiles``
and ``profiles serve`` processes: which person it picks, events sent for one id of the person
read back from another, and the stream's health recorded in the demo's Dagster instance, as a
real ``dagster-webserver`` then shows it (with the *Auto-materialize* tag on)."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import happybase
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from dagster import DagsterInstance
from live_rows import DAY_MS, table_opener, today, yesterday
from stream_observations import lag_check_results, observations
from webserver_wait import REPO, dagster_webserver, graphql

from profile_assets.demo import demo_instance, show_real_time
from profile_assets.live_demo import (
    SEGMENT,
    LiveCommands,
    LiveDemoError,
    LivePerson,
    ids_seen_on,
    persons_by_master,
    pick_person,
    send_and_watch,
    tenant_key,
    today_is_live,
)
from profile_store.event_bus.settings import EventBusSettings
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.layout import (
    IDENTITY_COMPONENTS,
    IDENTITY_COMPONENTS_LATEST,
    IDENTITY_PROFILES,
    day_dir,
)
from profile_store.launchers.child_processes import Stopped
from profile_store.profiles.live_cells import day_end_ms
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.table import (
    PROFILE_TABLE,
    ProfileRow,
    ensure_table,
    profile_cells,
    profile_key,
)

# Persons of the compacted day (masters sort in this order; ids by person, master first):
BUYER = ["cookie-a", "idfa-a"]  # already in the segment: not picked
ABSENT = ["cookie-b", "gaid-b"]  # no event on the day: not picked
FORGOTTEN = ["cookie-c", "gaid-c"]  # rows deleted since (an erasure): not picked
SHOPPER = ["cookie-d", "idfa-d", "gaid-d"]  # the one picked
ID_TYPES = {"cookie": "cookie", "idfa": "idfa", "gaid": "gaid"}


def write_day(lake: Path, day: str, persons: list[list[str]], seen: list[str]) -> None:
    """The identity run's assignment and profiles of the day, as its Spark job writes them."""
    assignment = day_dir(IDENTITY_COMPONENTS, day)
    rows = [
        {"profile": p, "master": ids[0], "first_seen": day, "size": len(ids)}
        for ids in persons
        for p in ids
    ]
    (lake / assignment).mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), lake / assignment / "part-0.parquet")
    (lake / IDENTITY_COMPONENTS_LATEST).write_text(assignment)
    (lake / day_dir(IDENTITY_PROFILES, day)).mkdir(parents=True)
    pq.write_table(
        pa.Table.from_pylist([{"profile": p} for p in seen]),
        lake / day_dir(IDENTITY_PROFILES, day) / "part-0.parquet",
    )


def write_rows(table, ids: list[str], as_of_ms: int, segments: dict[str, int]) -> None:
    """The rows compaction writes for a person (master: the first id)."""
    for profile in ids:
        row = ProfileRow(
            profile=profile,
            id_type=ID_TYPES[profile.split("-")[0]],
            master=ids[0],
            first_seen_ms=as_of_ms - DAY_MS,
            devices=len(ids),
            as_of_ms=as_of_ms,
            segments=segments,
            associations={o: ID_TYPES[o.split("-")[0]] for o in ids if o != profile},
        )
        table.put(profile_key(profile), profile_cells(row))


@pytest.fixture
def connection(gateway):
    opened = happybase.Connection(**gateway.connection_kwargs())
    ensure_table(opened, PROFILE_TABLE)
    yield opened
    opened.delete_table(PROFILE_TABLE, disable=True)
    opened.close()


def compacted_day(connection, lake: Path, as_of_ms: int) -> ProfileReader:
    """Yesterday compacted: four persons, one already in the segment, one without events,
    one whose rows were deleted."""
    day = yesterday()
    write_day(lake, day, [BUYER, ABSENT, FORGOTTEN, SHOPPER], [BUYER[1], FORGOTTEN[1], SHOPPER[2]])
    table = connection.table(PROFILE_TABLE)
    in_segment = {SEGMENT: as_of_ms + 30 * DAY_MS}
    write_rows(table, BUYER, as_of_ms, in_segment)
    write_rows(table, ABSENT, as_of_ms, {})
    write_rows(table, SHOPPER, as_of_ms, {"clickers": as_of_ms + 5 * DAY_MS})
    return ProfileReader(table_opener(connection, PROFILE_TABLE))


def picked(reader: ProfileReader, lake: Path) -> LivePerson:
    person = pick_person(
        reader, persons_by_master(lake), ids_seen_on(lake, date.fromisoformat(yesterday()))
    )
    assert person is not None
    return person


def live_commands(
    bus, gateway, tmp_path: Path, instance: DagsterInstance | None = None
) -> LiveCommands:
    """The two commands on the test's topic and gateway, in a consumer group of their own."""
    return LiveCommands(
        bus,
        (gateway.host, gateway.port),
        tmp_path / "lake",
        tmp_path / "logs",
        group_id=f"live-demo-{uuid.uuid4().hex[:8]}",
        instance=instance,
    )


def test_the_person_picked_has_an_event_on_the_day_every_row_and_no_id_in_the_segment(
    connection, tmp_path
):
    reader = compacted_day(connection, tmp_path, day_end_ms(yesterday()))

    person = picked(reader, tmp_path)

    assert person.master == SHOPPER[0]
    assert person.ids == tuple(sorted(SHOPPER))
    # events for an id that is not the master, read from an id of another kind
    assert person.sent_to.profile != SHOPPER[0]
    assert person.read_from.id_type != person.sent_to.id_type


def test_the_events_and_the_reads_go_to_two_ids_when_the_person_has_one_kind_of_id(
    connection, tmp_path
):
    cookies = ["cookie-e2", "cookie-e1"]  # the master sorts last
    write_day(tmp_path, yesterday(), [cookies], cookies)
    write_rows(connection.table(PROFILE_TABLE), cookies, day_end_ms(yesterday()), {})

    person = picked(ProfileReader(table_opener(connection, PROFILE_TABLE)), tmp_path)

    assert (person.sent_to.profile, person.read_from.profile) == ("cookie-e1", "cookie-e2")


def test_no_person_is_picked_when_every_one_is_in_the_segment_already(connection, tmp_path):
    as_of = day_end_ms(yesterday())
    reader = compacted_day(connection, tmp_path, as_of)
    write_rows(connection.table(PROFILE_TABLE), SHOPPER, as_of, {SEGMENT: as_of + DAY_MS})
    seen = ids_seen_on(tmp_path, date.fromisoformat(yesterday()))

    assert pick_person(reader, persons_by_master(tmp_path), seen) is None


def test_a_purchase_sent_for_one_id_shows_in_the_segments_of_another_id_within_the_bound(
    bus, connection, gateway, tmp_path
):
    reader = compacted_day(connection, tmp_path / "lake", day_end_ms(yesterday()))
    person = picked(reader, tmp_path / "lake")

    with live_commands(bus, gateway, tmp_path) as commands:
        outcome = send_and_watch(commands, reader, person, tenant_key("com.shopfast.android"))

    assert outcome.status == 202 and outcome.answer == {"accepted": 3, "rejected": []}
    assert {event["user_id"] for event in outcome.events} == {person.sent_to.profile}
    assert {event["event_time"][:10] for event in outcome.events} == {today()}
    assert SEGMENT not in outcome.before.segments
    assert outcome.after.profile == person.read_from.profile != person.sent_to.profile
    assert {SEGMENT, "shoppers", "shoe_lovers", "clickers"} <= set(outcome.after.segments)
    for event_type in ("view_item", "add_to_cart", "purchase"):
        assert outcome.after.counters[event_type] == pytest.approx(1.0, rel=1e-3)
    assert outcome.job_summary.startswith("3 messages in ")
    assert " 3 events applied" in outcome.job_summary
    # every row of the person shows it, the master's too
    for profile in SHOPPER:
        assert SEGMENT in reader.segments(profile).segments


def test_the_launcher_records_the_streams_health_in_the_instance_until_the_job_stops(
    bus, connection, gateway, tmp_path
):
    reader = compacted_day(connection, tmp_path / "lake", day_end_ms(yesterday()))
    person = picked(reader, tmp_path / "lake")
    instance = DagsterInstance.ephemeral()

    with live_commands(bus, gateway, tmp_path, instance) as commands:
        when_up = observations(instance)
        outcome = send_and_watch(commands, reader, person, tenant_key("com.shopfast.android"))

    job = f"live_profiles at {commands.metrics_url.removeprefix('http://')}"
    group = commands.group_id
    # one as soon as the commands were up: the job running, nothing sent yet
    (first,) = when_up
    assert first[f"{job} events committed"].value == 0
    assert first[f"{job} alive"].text == "ok"
    # the last just before the job stopped, once it had committed the three events
    recorded = observations(instance)
    assert len(recorded) == commands.observer.recorded >= 2
    last = recorded[-1]
    assert last["topic"].text == bus.topic
    assert last[f"{group} lag"].value == 0
    assert last[f"{job} events committed"].value == 3
    assert last[f"{job} ready"].text == "ok"
    newest = datetime.fromisoformat(last[f"{group} newest event time"].text)
    assert newest == datetime.fromisoformat(outcome.events[-1]["event_time"])
    assert lag_check_results(instance)[-1] is True


def test_events_the_daily_state_already_counts_never_show_and_the_act_fails_naming_them(
    bus, connection, gateway, tmp_path
):
    # the person's rows already count today: the live job leaves today's events to the run
    end_of_today = day_end_ms(today())
    reader = compacted_day(connection, tmp_path / "lake", end_of_today)
    person = picked(reader, tmp_path / "lake")

    with live_commands(bus, gateway, tmp_path) as commands, pytest.raises(LiveDemoError) as failed:
        send_and_watch(commands, reader, person, tenant_key("com.shopfast.android"), timeout_s=3)

    assert str(failed.value).startswith(
        f"segments({person.read_from.profile}) did not show 'buyers' within 3 s of the 202 "
        f"for {person.sent_to.profile}"
    )


def test_a_tenant_file_without_a_key_for_the_app_is_refused_naming_the_app(tmp_path):
    tenants = tmp_path / "tenants.json"
    tenants.write_text('{"tenants": [{"name": "n", "api_keys": ["k"], "app_ids": ["other"]}]}')

    with pytest.raises(LiveDemoError, match="no tenant with an API key may send app_id 'shop'"):
        tenant_key("shop", tenants)


def test_a_command_killed_at_the_stop_is_reported_with_the_end_of_its_log(tmp_path):
    commands = LiveCommands(
        EventBusSettings(bootstrap_servers="127.0.0.1:9"), ("127.0.0.1", 9), tmp_path, tmp_path
    )
    (tmp_path / "serve.log").write_text("INFO: Waiting for connections to close.\n")
    commands.stopped = {"live-profiles": Stopped(0, 0.4, False), "serve": Stopped(-9, 60.2, True)}

    [report] = commands.slow_stops()

    assert report.startswith(
        "profiles serve did not exit within 60 s of SIGTERM and was killed (exit code -9)"
    )
    assert "Waiting for connections to close." in report


def test_a_command_that_stops_in_a_few_seconds_is_not_reported(tmp_path):
    commands = LiveCommands(
        EventBusSettings(bootstrap_servers="127.0.0.1:9"), ("127.0.0.1", 9), tmp_path, tmp_path
    )
    commands.stopped = {"live-profiles": Stopped(0, 4.9, False), "serve": Stopped(0, 0.3, False)}

    assert commands.slow_stops() == []


def test_today_is_live_only_after_demo_days_that_end_before_today():
    now = datetime(2026, 11, 27, 9, 30, tzinfo=UTC).date()

    assert today_is_live(now - timedelta(days=1), now)
    assert not today_is_live(now, now)
    assert not today_is_live(now + timedelta(days=2), now)


# --- the demo's section, as `make demo` runs it (its own Kafka, its own gateway) ----------------


def use_demo_hbase(patch: pytest.MonkeyPatch, data_dir: Path) -> Path:
    """The demo's embedded HBase over ``data_dir``, as the environment names it."""
    for name in ("HBASE_THRIFT_HOST", "HBASE_TABLE_PREFIX"):
        patch.delenv(name, raising=False)
    patch.setenv("PROFILES_HBASE_DATA_DIR", str(data_dir))
    return data_dir


@pytest.fixture
def demo_hbase(tmp_path, monkeypatch) -> Path:
    """The demo's embedded HBase over a directory of the test's."""
    return use_demo_hbase(monkeypatch, tmp_path / "hbase")


def with_compacted_day(data_dir: Path, lake: Path, load) -> None:
    with EmbeddedGateway(data_dir) as gateway:
        opened = happybase.Connection(**gateway.connection_kwargs())
        try:
            ensure_table(opened, PROFILE_TABLE)
            load(opened, lake)
        finally:
            opened.close()


@dataclass(frozen=True)
class DemoSection:
    shown: bool
    out: str  # what it printed
    root: Path  # the lake's parent, where the act keeps Kafka's data and the logs
    lake: Path
    home: Path  # the demo's DAGSTER_HOME


@pytest.fixture(scope="module")
def demo_section(tmp_path_factory) -> DemoSection:
    """The act as `make demo` runs it, once for the module: its own Kafka, the demo's embedded
    HBase over a compacted day, and the demo's Dagster instance (the local instance file in a
    DAGSTER_HOME of its own, prepared as the demo prepares it)."""
    root = tmp_path_factory.mktemp("demo")
    home = root / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "examples" / "dagster.local.yaml", home / "dagster.yaml")
    lake = root / "lake"
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        data_dir = use_demo_hbase(patch, root / "hbase")
        patch.setenv("DAGSTER_HOME", str(home))
        with_compacted_day(
            data_dir, lake, lambda c, at: compacted_day(c, at, day_end_ms(yesterday()))
        )
        with demo_instance() as instance, contextlib.redirect_stdout(printed):
            shown = show_real_time(lake, [date.fromisoformat(yesterday())], instance)
    return DemoSection(shown, printed.getvalue(), root, lake, home)


@pytest.mark.jvm
def test_the_demo_section_starts_kafka_shows_the_purchase_from_another_id_and_cleans_up(
    demo_section,
):
    out = demo_section.out
    assert demo_section.shown, out
    assert '-> 202 {"accepted": 3, "rejected": []}' in out
    assert f"  segments({SHOPPER[0]}), another id of the person: buyers visible " in out
    assert "Kafka stopped, its data removed" in out
    assert not list(demo_section.root.glob("live-demo-*"))  # Kafka's data and the logs


@pytest.mark.jvm
def test_the_demo_section_records_the_streams_health_in_the_demos_instance(demo_section):
    with DagsterInstance.from_config(str(demo_section.home)) as instance:
        recorded = observations(instance)
        checks = lag_check_results(instance)

    assert len(recorded) >= 2 and len(checks) == len(recorded)
    last = recorded[-1]
    assert last["profiles-live-profiles lag"].value == 0
    (job,) = (label for label in last if label.endswith(" events committed"))
    assert job.startswith("live_profiles at 127.0.0.1:") and last[job].value == 3
    assert checks[-1] is True
    line = next(line for line in demo_section.out.splitlines() if "event_stream: " in line)
    assert f"event_stream: {len(recorded)} observations recorded in the Dagster instance" in line
    assert "profiles-live-profiles lag 0" in line and "3 events committed, ready ok" in line


DEMO_IN_THE_UI = """
query ($job: PipelineSelector!, $sensor: SensorSelector!) {
  instance { autoMaterializePaused }
  assetNodes(pipeline: $job) { automationCondition { __typename } }
  sensorOrError(sensorSelector: $sensor) {
    __typename
    ... on Sensor { sensorState { status } }
  }
  assetOrError(assetKey: {path: ["event_stream"]}) {
    ... on Asset {
      assetEventHistory(limit: 100, eventTypeSelectors: [OBSERVATION]) {
        results { __typename ... on ObservationEvent { metadataEntries { label } } }
      }
    }
  }
}
"""


@pytest.mark.jvm
@pytest.mark.dagster_services
def test_the_ui_on_the_demos_instance_lists_the_observations_and_says_auto_materialize_on(
    demo_section,
):
    env = {**os.environ, "PROFILES_LAKE_ROOT": str(demo_section.lake)}
    env["PROFILES_HBASE_DATA_DIR"] = str(demo_section.root / "hbase")
    repository = {"repositoryLocationName": "profile_assets.definitions"}
    repository["repositoryName"] = "__repository__"
    variables = {
        "job": {**repository, "pipelineName": "daily_pipeline"},
        "sensor": {**repository, "sensorName": "automation_sensor"},
    }

    with dagster_webserver(demo_section.home, env) as url:
        shown = graphql(url, DEMO_IN_THE_UI, variables)

    # The job page shows its Auto-materialize tag (assets with automation conditions), read
    # from the instance's switch: on, beside the running automation sensor.
    assert any(node["automationCondition"] for node in shown["assetNodes"])
    assert shown["instance"]["autoMaterializePaused"] is False
    assert shown["sensorOrError"] == {"__typename": "Sensor", "sensorState": {"status": "RUNNING"}}
    # The asset's page lists the observations the demo recorded ("No events found" before).
    events = shown["assetOrError"]["assetEventHistory"]["results"]
    assert len(events) >= 2 and {event["__typename"] for event in events} == {"ObservationEvent"}
    labels = {entry["label"] for entry in events[0]["metadataEntries"]}
    assert {"topic", "profiles-live-profiles lag"} <= labels


def test_the_demo_section_fails_naming_the_day_when_no_person_can_show_it(
    demo_hbase, tmp_path, capsys
):
    lake = tmp_path / "lake"

    def everyone_a_buyer(connection, root: Path) -> None:
        as_of = day_end_ms(yesterday())
        compacted_day(connection, root, as_of)
        write_rows(connection.table(PROFILE_TABLE), SHOPPER, as_of, {SEGMENT: as_of + DAY_MS})

    with_compacted_day(demo_hbase, lake, everyone_a_buyer)

    shown = show_real_time(lake, [date.fromisoformat(yesterday())])

    out = capsys.readouterr().out
    assert not shown
    assert f"FAILED (the bound is 60s): no person of 2+ ids active on {yesterday()} is " in out
    assert "outside buyers" in out
