"""The demo's real-time act (``profile_assets/live_demo.py``) against the real broker, a real
embedded gateway holding a small compacted day and the real ``profiles stream live-profiles``
and ``profiles serve`` processes: which person it picks, and events sent for one id of the
person read back from another."""

from __future__ import annotations

import uuid
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import happybase
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from live_rows import DAY_MS, table_opener, today, yesterday

from profile_assets.demo import show_real_time
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
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.layout import (
    IDENTITY_COMPONENTS,
    IDENTITY_COMPONENTS_LATEST,
    IDENTITY_PROFILES,
    day_dir,
)
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


def live_commands(bus, gateway, tmp_path: Path) -> LiveCommands:
    """The two commands on the test's topic and gateway, in a consumer group of their own."""
    return LiveCommands(
        bus,
        (gateway.host, gateway.port),
        tmp_path / "lake",
        tmp_path / "logs",
        group_id=f"live-demo-{uuid.uuid4().hex[:8]}",
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


def test_today_is_live_only_after_demo_days_that_end_before_today():
    now = datetime(2026, 11, 27, 9, 30, tzinfo=UTC).date()

    assert today_is_live(now - timedelta(days=1), now)
    assert not today_is_live(now, now)
    assert not today_is_live(now + timedelta(days=2), now)


# --- the demo's section, as `make demo` runs it (its own Kafka, its own gateway) ----------------


@pytest.fixture
def demo_hbase(tmp_path, monkeypatch) -> Path:
    """The demo's embedded HBase over a directory of the test's, as the environment names it."""
    data_dir = tmp_path / "hbase"
    for name in ("HBASE_THRIFT_HOST", "HBASE_TABLE_PREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PROFILES_HBASE_DATA_DIR", str(data_dir))
    return data_dir


def with_compacted_day(data_dir: Path, lake: Path, load) -> None:
    with EmbeddedGateway(data_dir) as gateway:
        opened = happybase.Connection(**gateway.connection_kwargs())
        try:
            ensure_table(opened, PROFILE_TABLE)
            load(opened, lake)
        finally:
            opened.close()


def test_the_demo_section_starts_kafka_shows_the_purchase_from_another_id_and_cleans_up(
    demo_hbase, tmp_path, capsys
):
    lake = tmp_path / "lake"
    with_compacted_day(
        demo_hbase, lake, lambda c, root: compacted_day(c, root, day_end_ms(yesterday()))
    )

    shown = show_real_time(lake, [date.fromisoformat(yesterday())])

    out = capsys.readouterr().out
    assert shown, out
    assert '-> 202 {"accepted": 3, "rejected": []}' in out
    assert f"  segments({SHOPPER[0]}), another id of the person: buyers visible " in out
    assert "Kafka stopped, its data removed" in out
    assert not list(tmp_path.glob("live-demo-*"))  # Kafka's data and the logs


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
