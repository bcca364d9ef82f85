"""Kafka to the profiles, live, against the real broker and the real gateway: an event read from
any id of its person, new ids, ids found by lookup, and each event counted exactly once across a
replay of the topic, a kill -9 half-way through a batch's puts, a broker restart, late and
out-of-order events and a member that writes after it lost its partitions."""

from __future__ import annotations

import gc
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import boto3
import happybase
import httpx
import pytest
from botocore.config import Config as BotoConfig
from landing_files import drive
from live_rows import (
    DAY_MS,
    RULES,
    expected_counter,
    lake_with_rules,
    message,
    recent_ms,
    table_opener,
    today,
    write_lookup,
    write_person,
    yesterday,
)

from profile_store.cli.stream import lake_read
from profile_store.event_bus.producer import EventProducer
from profile_store.event_bus.settings import EventBusSettings
from profile_store.event_bus.topics import ensure_topic
from profile_store.hbase_gateway.pending import read_counters
from profile_store.hbase_gateway.store import DEFERRED_BATCH_MUTATIONS
from profile_store.lake.layout import SEGMENT_RULES
from profile_store.lake.storage import LocalLakeStorage, S3LakeStorage
from profile_store.profiles.live_cells import (
    Lineage,
    LiveCell,
    day_end_ms,
    decode_cell,
    parse_qualifier,
)
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.rules_in_force import (
    RulesInForce,
    read_rules_in_force,
    replace_rules_in_force,
)
from profile_store.profiles.segment_rules import SegmentRuleError, parse_rules, rules_digest
from profile_store.profiles.table import (
    PROFILE_PREFIX,
    ensure_table,
    profile_key,
)
from profile_store.realtime.live_profiles import LiveProfiles, LiveProfilesConfig

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def connection(gateway):
    opened = happybase.Connection(**gateway.connection_kwargs())
    yield opened
    opened.close()


@pytest.fixture
def table_name(connection, request) -> str:
    """A fresh profiles table for the test."""
    name = "live_" + str(abs(hash(request.node.nodeid)) % 10**10)
    ensure_table(connection, name)
    yield name
    connection.delete_table(name, disable=True)


@pytest.fixture
def reader(connection, table_name) -> ProfileReader:
    return ProfileReader(table_opener(connection, table_name))


@pytest.fixture
def job_for(gateway, table_name):
    """Start a live job on a test's topic and table, over a connection of its own (each job
    left open is closed after the test)."""
    started: list[tuple[LiveProfiles, happybase.Connection]] = []

    def start(
        bus: EventBusSettings,
        *,
        group: str | None = None,
        rules_in_force: Callable[[], RulesInForce] | None = None,
        on_rules: Callable[[RulesInForce], None] | None = None,
        **config,
    ) -> LiveProfiles:
        settings = LiveProfilesConfig(
            **{
                "group_id": group or f"live-{bus.topic}",
                "rules": parse_rules(RULES),
                "table_name": table_name,
                **config,
            }
        )
        own = happybase.Connection(**gateway.connection_kwargs())
        job = LiveProfiles(
            bus,
            table_opener(own, settings.table_name),
            settings,
            rules_in_force=rules_in_force,
            on_rules=on_rules,
        ).start()
        started.append((job, own))
        return job

    yield start
    for job, own in started:
        job.close()
        own.close()


def send(bus: EventBusSettings, messages) -> None:
    with EventProducer(bus) as producer:
        producer.send(messages)


def run_until(job: LiveProfiles, messages: int) -> None:
    drive(lambda: job.step(0.2), lambda: job.progress.messages >= messages)


def live_cells(table, profile: str) -> dict[Lineage, LiveCell]:
    cells = table.row(profile_key(profile), columns=[b"u"])
    return {parse_qualifier(name[2:]): decode_cell(value) for name, value in cells.items()}


def counter(reader: ProfileReader, profile: str, event_type: str, now_ms: int) -> float:
    view = reader.profile(profile, now_ms=now_ms)
    return view.counters.get(event_type, 0.0) if view is not None else 0.0


# --- what a read sees ---------------------------------------------------------------------------


def test_an_event_is_visible_in_a_read_of_another_id_of_the_same_person(
    bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    write_person(table, ["a1", "a2", "a3"])
    at = recent_ms(60)
    sent = [message("e1", "a2", at), message("e2", "a2", at + 5), message("e3", "a3", at, "buy")]
    send(bus, sent)
    run_until(job_for(bus), len(sent))

    now = at + 10
    for profile in ("a1", "a2", "a3"):
        assert reader.segments(profile, now_ms=now).segments == {"clickers": at + 5 + 7 * DAY_MS}
        assert counter(reader, profile, "click", now) == pytest.approx(
            expected_counter(sent, "click", now)
        )
        assert counter(reader, profile, "buy", now) == pytest.approx(1.0, rel=1e-6)


def test_an_id_never_seen_gets_a_row_of_its_own_and_no_other_row_changes(
    bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    write_person(table, ["a1", "a2"])
    before = dict(table.scan(row_prefix=PROFILE_PREFIX))
    at = recent_ms(30)
    send(bus, [message("n1", "newcomer", at)])
    run_until(job_for(bus), 1)

    after = dict(table.scan(row_prefix=PROFILE_PREFIX))
    assert {key: cells for key, cells in after.items() if key != profile_key("newcomer")} == before
    assert reader.segments("newcomer", now_ms=at).segments == {"clickers": at + 7 * DAY_MS}
    view = reader.profile("newcomer", now_ms=at)
    assert view.master == "newcomer" and view.counters == {"click": pytest.approx(1.0)}


def test_an_unseen_id_whose_login_names_a_person_joins_that_persons_rows(
    bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    write_person(table, ["a1", "a2", "a3"])
    write_lookup(table, "member_id", "m-ann", "a1")
    at = recent_ms(30)
    send(bus, [message("n1", "new-phone", at, member_id="m-ann")])
    job = job_for(bus)
    run_until(job, 1)

    for profile in ("a1", "a2", "a3", "new-phone"):
        assert reader.segments(profile, now_ms=at).segments == {"clickers": at + 7 * DAY_MS}
    assert job.progress.resolved_by_lookup == 1


def test_reads_add_live_cells_only_for_days_the_daily_state_does_not_count(
    bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    end_of_yesterday = day_end_ms(yesterday())
    daily_click = (4.0, end_of_yesterday - 1000, 7 * DAY_MS)
    write_person(table, ["a1", "a2"], counters={"click": daily_click}, segments={"old": 1})
    at = recent_ms(30)
    sent = [message("e1", "a1", at), message("e2", "a2", at)]
    send(bus, sent)
    run_until(job_for(bus), 2)

    daily_now = 4.0 * 2.0 ** (-(at - daily_click[1]) / (7 * DAY_MS))
    assert counter(reader, "a2", "click", at) == pytest.approx(daily_now + 2.0, rel=1e-9)
    # Once a daily run covers today, its state counts today's events and the live cells are
    # ignored, until that run deletes them.
    table.put(profile_key("a2"), {b"s:as_of": str(day_end_ms(today())).encode()})
    assert counter(reader, "a2", "click", at) == pytest.approx(daily_now, rel=1e-9)
    assert reader.segments("a2", now_ms=at).segments == {}


# --- exactly once -------------------------------------------------------------------------------


def traffic(ids: list[str], count: int, prefix: str = "e") -> list[tuple[bytes, bytes]]:
    """``count`` events of today on ``ids``, clicks, purchases and other types, none later
    than now: shortly after midnight the hour before is yesterday, so they crowd into the
    minutes since."""
    rng = random.Random(prefix)
    start = recent_ms(3600)
    spread = max(1, min(3_000_000, recent_ms(0) - start))
    kinds = ("click", "purchase", "view_item", "open")
    return [
        message(
            f"{prefix}{i}",
            rng.choice(ids),
            start + rng.randrange(0, spread),
            rng.choice(kinds),
            event_attributes={"product_type": rng.choice(("shoes", "hats"))},
        )
        for i in range(count)
    ]


def assert_counted_once(reader: ProfileReader, ids: list[str], sent, now: int) -> None:
    for event_type in ("click", "purchase", "view_item", "open"):
        expected = expected_counter(sent, event_type, now)
        for profile in ids:
            assert counter(reader, profile, event_type, now) == pytest.approx(expected, rel=1e-9)


def test_reading_the_whole_topic_again_changes_no_cell(
    bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    ids = ["p1", "p2", "p3", "p4"]
    write_person(table, ids)
    sent = traffic(ids, 300)
    send(bus, sent)
    run_until(job_for(bus, max_poll_messages=37), len(sent))
    before = dict(table.scan(row_prefix=PROFILE_PREFIX))

    again = job_for(bus, group=f"again-{bus.topic}", max_poll_messages=101)
    run_until(again, len(sent))

    assert dict(table.scan(row_prefix=PROFILE_PREFIX)) == before
    assert again.progress.events_already_held == len(sent)
    assert again.progress.events_applied == 0 and again.progress.rows_written == 0
    assert_counted_once(reader, ids, sent, recent_ms(0))


def test_the_order_of_the_events_and_the_batches_change_no_result(
    kafka_broker, connection, table_name, job_for
):
    ids = ["p1", "p2", "p3"]
    sent = traffic(ids, 200)
    results = []
    for order, batch in ((sent, 13), (sorted(sent, key=lambda m: random.random()), 200)):
        bus = EventBusSettings(
            bootstrap_servers=kafka_broker.bootstrap_servers,
            topic=f"order-{batch}-{os.getpid()}-{time.monotonic_ns()}",
            partitions=3,
        )
        ensure_topic(bus)
        name = f"{table_name}_{batch}"
        ensure_table(connection, name)
        try:
            write_person(connection.table(name), ids)
            send(bus, order)
            run_until(job_for(bus, max_poll_messages=batch, table_name=name), len(sent))
            results.append(live_cells(connection.table(name), "p1"))
        finally:
            connection.delete_table(name, disable=True)
    first, second = results
    assert first.keys() == second.keys()
    for lineage, cell in first.items():
        other = second[lineage]
        assert other.segments == cell.segments
        for name, (value, last) in cell.counters.items():
            assert other.counters[name] == (pytest.approx(value, rel=1e-12), last)


def test_kill_9_half_way_through_a_batchs_puts_loses_and_repeats_no_event(
    bus, connection, gateway, table_name, reader, job_for, tmp_path
):
    table = connection.table(table_name)
    ids = ["k1", "k2", "k3", "k4", "k5"]
    write_person(table, ids)
    sent = traffic(ids, 400)
    send(bus, sent)
    group = f"live-{bus.topic}"
    flag = tmp_path / "stalled"
    child = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("live_child.py")),
            *("--bootstrap", bus.bootstrap_servers, "--topic", bus.topic, "--group", group),
            *("--hbase-port", str(gateway.port), "--table", table_name, "--flag", str(flag)),
        ],
        stderr=subprocess.PIPE,
    )
    drive(lambda: time.sleep(0.1), lambda: flag.exists() or child.poll() is not None)
    assert child.poll() is None, child.stderr.read().decode()
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    written = {p: live_cells(table, p) for p in ids}
    assert any(written.values()) and not all(written.values()), "a batch stopped half-way"

    job = job_for(bus, group=group)
    run_until(job, len(sent))

    assert job.progress.events_already_held > 0  # the rows the killed batch reached
    assert_counted_once(reader, ids, sent, recent_ms(0))


def test_a_broker_restart_under_the_job_loses_and_repeats_no_event(
    kafka_broker, bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    ids = ["b1", "b2", "b3"]
    write_person(table, ids)
    first, second = traffic(ids, 200), traffic(ids, 200, prefix="f")
    send(bus, first)
    job = job_for(bus, max_poll_messages=50)
    stop = threading.Event()
    runner = threading.Thread(target=job.run, args=(stop,))
    runner.start()
    try:
        drive(lambda: time.sleep(0.05), lambda: job.progress.messages >= 100)
        kafka_broker.kill()
        kafka_broker.start()
        send(bus, second)
        now = recent_ms(0)
        drive(
            lambda: time.sleep(0.2),
            lambda: (
                not runner.is_alive()
                or counter(reader, "b1", "click", now)
                >= expected_counter(first + second, "click", now) * (1 - 1e-9)
            ),
        )
    finally:
        stop.set()
        runner.join(120)
    assert not runner.is_alive()
    assert_counted_once(reader, ids, first + second, recent_ms(0))


def test_a_late_event_of_a_day_the_daily_state_counts_is_not_counted_again(
    bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    write_person(table, ["a1", "a2"])  # daily state: up to the end of yesterday
    late = day_end_ms(yesterday()) - 3_600_000
    out_of_order = [message("e2", "a1", recent_ms(10)), message("e1", "a1", recent_ms(600))]
    send(bus, [message("late", "a2", late), *out_of_order])
    job = job_for(bus)
    run_until(job, 3)

    now = recent_ms(0)
    assert job.progress.events_superseded == 1 and job.progress.events_applied == 2
    assert counter(reader, "a1", "click", now) == pytest.approx(
        expected_counter(out_of_order, "click", now), rel=1e-9
    )
    assert {lineage.day for lineage in live_cells(table, "a1")} == {today()}


def test_a_member_that_lost_its_partitions_cannot_take_a_cell_back(
    kafka_broker, connection, gateway, table_name, reader, job_for
):
    bus = EventBusSettings(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        topic=f"stale-{os.getpid()}-{time.monotonic_ns()}",
        partitions=1,
    )
    ensure_topic(bus)
    table = connection.table(table_name)
    write_person(table, ["z1", "z2"])
    sent = traffic(["z1", "z2"], 40)
    send(bus, sent)
    own = happybase.Connection(**gateway.connection_kwargs())
    stale = LiveProfiles(
        bus,
        table_opener(own, table_name),
        LiveProfilesConfig(
            group_id="stale", rules=parse_rules(RULES), table_name=table_name, max_poll_messages=15
        ),
    ).start()
    # The stale member stops between its reads and its puts (a long GC pause, a stopped VM)
    # until the current member has applied every event.
    writing, release = threading.Event(), threading.Event()
    write = stale._write

    def paused_write(*args):
        writing.set()
        release.wait(120)
        return write(*args)

    stale._write = paused_write
    writer = threading.Thread(
        target=lambda: drive(lambda: stale.step(1.0), lambda: stale.progress.messages > 0)
    )
    writer.start()  # reads the rows, then waits to write its first 15 events
    try:
        drive(lambda: time.sleep(0.05), lambda: writing.is_set() or not writer.is_alive())
        current = job_for(bus, group="current")
        run_until(current, len(sent))
        before = dict(table.scan(row_prefix=PROFILE_PREFIX))
    finally:
        release.set()
        writer.join(120)
        stale.close()
        own.close()
    assert stale.progress.rows_written > 0, "the stale member wrote its batch late"
    assert dict(table.scan(row_prefix=PROFILE_PREFIX)) == before
    assert_counted_once(reader, ["z1", "z2"], sent, recent_ms(0))


def test_a_corrupt_live_cell_is_replaced_by_its_lineages_next_state(
    kafka_broker, connection, table_name, reader, job_for
):
    bus = EventBusSettings(
        bootstrap_servers=kafka_broker.bootstrap_servers,
        topic=f"corrupt-{os.getpid()}-{time.monotonic_ns()}",
        partitions=1,
    )
    ensure_topic(bus)
    table = connection.table(table_name)
    write_person(table, ["r1", "r2"])
    lineage = Lineage(today(), 0, "r1")
    table.put(profile_key("r1"), {lineage.column: b"{not json"}, timestamp=1)
    at = recent_ms(30)
    send(bus, [message("e1", "r1", at)])
    job = job_for(bus)
    run_until(job, 1)

    assert job.progress.events_applied == 1
    for profile in ("r1", "r2"):
        assert counter(reader, profile, "click", at) == pytest.approx(1.0)


def test_a_person_merged_between_batches_gets_both_ids_events_on_every_row(
    bus, connection, table_name, reader, job_for
):
    table = connection.table(table_name)
    write_person(table, ["x1"])
    write_person(table, ["y1"])
    before = [message("x-1", "x1", recent_ms(300)), message("y-1", "y1", recent_ms(290), "buy")]
    send(bus, before)
    job = job_for(bus)
    run_until(job, 2)
    # The daily run links them: one person, master x1; today's live cells stay where they were.
    write_person(table, ["x1", "y1"])
    after = [message("x-2", "x1", recent_ms(20))]
    send(bus, after)
    run_until(job, 3)

    now = recent_ms(0)
    for profile in ("x1", "y1"):
        assert counter(reader, profile, "click", now) == pytest.approx(
            expected_counter(before + after, "click", now), rel=1e-9
        )
        assert counter(reader, profile, "buy", now) == pytest.approx(
            expected_counter(before, "buy", now), rel=1e-9
        )


# --- the command ----------------------------------------------------------------------------------

SHOP_KEY = "live-shop-key-0123456789"


def live_command(tmp_path: Path, *extra: str) -> list[str]:
    """The command over a lake whose rules in force are ``RULES``."""
    lake = lake_with_rules(tmp_path / "lake")
    return [
        sys.executable,
        "-m",
        "profile_store.cli",
        "stream",
        "live-profiles",
        *("--lake", lake, *extra),
    ]


def test_profiles_stream_live_profiles_feeds_the_cli_and_http_reads_until_sigterm(
    bus, connection, gateway, tmp_path, serve_process
):
    prefix = f"cmd{os.getpid()}"
    ensure_table(connection, f"{prefix}_profiles")
    process: subprocess.Popen | None = None
    try:
        write_person(connection.table(f"{prefix}_profiles"), ["c1", "c2", "c3"])
        hbase = ["--hbase-host", "127.0.0.1", "--hbase-port", str(gateway.port)]
        hbase += ["--hbase-table-prefix", prefix]
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
            "PROFILES_KAFKA_TOPIC": bus.topic,
        }
        process = subprocess.Popen(
            live_command(tmp_path, *hbase), cwd=tmp_path, env=env, stderr=subprocess.PIPE
        )
        at = recent_ms(30)
        send(bus, [message("e1", "c2", at), message("e2", "c1", at, "purchase")])
        reader = ProfileReader(table_opener(connection, f"{prefix}_profiles"))
        drive(
            lambda: time.sleep(0.2),
            lambda: process.poll() is not None or "buyers" in reader.segments("c3").segments,
        )
        shown = subprocess.run(
            [sys.executable, "-m", "profile_store.cli", "profile", "segments", "c3", "--json"]
            + hbase,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        tenants = tmp_path / "tenants.json"
        tenants.write_text(
            json.dumps({"tenants": [{"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["shop"]}]})
        )
        url, _ = serve_process(
            [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
            + ["--tenants", str(tenants), *hbase]
        )
        served = httpx.get(f"{url}/v1/profiles/c3", headers={"X-API-Key": SHOP_KEY}, timeout=30)
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    finally:
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        connection.delete_table(f"{prefix}_profiles", disable=True)

    assert process.returncode == 0, err.decode()
    assert b"live profiles stopped: 2 messages" in err
    assert json.loads(shown.stdout)["segments_expiry_ms"] == {
        "buyers": at + 60 * DAY_MS,
        "clickers": at + 7 * DAY_MS,
    }
    body = served.json()
    assert served.status_code == 200 and set(body["segments"]) == {"buyers", "clickers"}
    # one event each, decayed over the seconds since (a half-life of seven days)
    assert body["counters"] == {
        "click": pytest.approx(1.0, rel=1e-3),
        "purchase": pytest.approx(1.0, rel=1e-3),
    }


def test_profiles_stream_live_profiles_serves_its_lag_events_batch_time_and_rules_digest(
    bus, connection, gateway, tmp_path
):
    """And the digest of the rules set while it runs, once it has read them again."""
    prefix = f"met{os.getpid()}"
    ensure_table(connection, f"{prefix}_profiles")
    hbase = ["--hbase-host", "127.0.0.1", "--hbase-port", str(gateway.port)]
    hbase += ["--hbase-table-prefix", prefix, "--group-id", f"metrics-{bus.topic}"]
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
        "PROFILES_KAFKA_TOPIC": bus.topic,
    }
    log = tmp_path / "live.log"
    at = recent_ms(30)
    send(bus, [message("m1", "d1", at), message("m2", "d2", at, "purchase")])
    with open(log, "wb") as out:
        process = subprocess.Popen(
            live_command(tmp_path, *hbase, "--metrics-port", "0", "--rules-refresh-seconds", "0.5"),
            cwd=tmp_path,
            env=env,
            stderr=out,
        )
    text = ""
    try:
        port: re.Match | None = None

        def scraped() -> bool:
            nonlocal text, port
            port = port or re.search(r"metrics on http://127\.0\.0\.1:(\d+)/", log.read_text())
            if process.poll() is not None or port is None:
                return process.poll() is not None
            text = httpx.get(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=30).text
            return metric(text, "events_total") == 2 and metric(text, "lag_messages") == 0

        drive(lambda: time.sleep(0.3), scraped)
        first_text = text
        replace_rules_in_force(LocalLakeStorage(tmp_path / "lake"), json.dumps(NEW_RULES), "new")
        new_digest = rules_digest(parse_rules(NEW_RULES))
        new_info = f'segment_rules_info{{digest="{new_digest}",rules="{len(NEW_RULES)}"}} 1.0'

        def rescraped() -> bool:
            nonlocal text
            text = httpx.get(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=30).text
            return new_info in text or process.poll() is not None

        drive(lambda: time.sleep(0.3), rescraped)
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0, log.read_text()
        connection.delete_table(f"{prefix}_profiles", disable=True)
    assert metric(first_text, "events_total") == 2, log.read_text()
    assert metric(first_text, "lag_messages") == 0
    assert metric(first_text, "write_seconds_count") >= 1
    digest = rules_digest(parse_rules(RULES))
    assert f'segment_rules_info{{digest="{digest}",rules="{len(RULES)}"}} 1.0' in first_text
    assert f"digest {digest}, from {tmp_path / 'lake' / SEGMENT_RULES}" in log.read_text()
    assert new_info in text
    assert f"segment rules changed: 1 segment rule, digest {new_digest}" in log.read_text()


def metric(text: str, name: str) -> float | None:
    found = re.search(rf"^profiles_live_profiles_{name} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


NEW_RULES = [{"segment": "browsers", "event_type": "browse", "ttl_days": 3}]


def test_rules_set_while_the_job_runs_apply_from_its_next_batch_on(bus, reader, job_for):
    in_force = [RulesInForce(parse_rules(RULES), "RULES")]
    told: list[str] = []
    job = job_for(
        bus,
        rules_in_force=lambda: in_force[0],
        on_rules=lambda rules: told.append(rules.digest),
        rules_refresh_seconds=0.1,
    )
    at = recent_ms(30)
    send(bus, [message("b1", "r1", at, "browse")])
    run_until(job, 1)
    assert reader.segments("r1", now_ms=at).segments == {}  # no rule for it yet

    in_force[0] = RulesInForce(parse_rules(NEW_RULES), "new")
    time.sleep(0.2)
    send(bus, [message("b2", "r1", at, "browse")])
    run_until(job, 2)
    assert reader.segments("r1", now_ms=at).segments == {"browsers": at + 3 * DAY_MS}
    assert told == [rules_digest(parse_rules(NEW_RULES))]


def unreachable_s3_lake() -> S3LakeStorage:
    """An S3 lake whose endpoint refuses connections: botocore's own error, at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = boto3.client(
        "s3",
        endpoint_url=f"http://127.0.0.1:{port}",
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=BotoConfig(retries={"max_attempts": 1}, connect_timeout=2),
    )
    return S3LakeStorage("s3://lake/prefix", client)


def invalid_rules() -> RulesInForce:
    raise SegmentRuleError("segment_rules[0]: segment 'x': ttl_days must be in (0, 3650]")


@pytest.mark.parametrize(
    ("read_again", "warned"),
    [
        (lambda: invalid_rules, "segment rules not re-read (segment_rules[0]: segment 'x'"),
        (
            lambda: lake_read(lambda: read_rules_in_force(unreachable_s3_lake())),
            "segment rules not re-read (the lake: Could not connect to the endpoint URL",
        ),
    ],
    ids=["no-longer-valid", "s3-unreachable"],
)
def test_rules_that_cannot_be_read_again_leave_the_rules_in_force(
    bus, reader, job_for, caplog, read_again, warned
):
    job = job_for(bus, rules_in_force=read_again(), rules_refresh_seconds=0.1)
    at = recent_ms(30)
    time.sleep(0.2)
    send(bus, [message("c1", "r2", at)])
    run_until(job, 1)
    assert reader.segments("r2", now_ms=at).segments == {"clickers": at + 7 * DAY_MS}
    assert warned in caplog.text


def test_profiles_stream_live_profiles_refuses_a_bad_rule_in_the_lake_naming_it(tmp_path):
    command = live_command(tmp_path)
    bad = [{"segment": "x", "event_type": "click", "ttl_days": -1}]
    (tmp_path / "lake" / SEGMENT_RULES).write_text(json.dumps(bad))  # edited by hand
    completed = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 2
    assert "segment_rules[0]: segment 'x': ttl_days must be in (0, 3650], got -1.0" in (
        completed.stderr
    )


def test_a_person_already_spread_over_its_rows_costs_one_read_of_its_origins_rows(
    bus, connection, gateway, table_name, reader, job_for
):
    table = connection.table(table_name)
    ids = ["s1", "s2", "s3", "s4"]
    write_person(table, ids)
    first = [message("e1", "s1", recent_ms(60))]
    send(bus, first)
    job = job_for(bus)
    run_until(job, 1)  # the person's first live cell: its rows are read and spread over
    requested: list[int] = []
    client = job.open_table().__enter__().connection.client
    rows_with_columns = client.getRowsWithColumns

    def counting(table_name, keys, columns, attributes):
        requested.append(len(keys))
        return rows_with_columns(table_name, keys, columns, attributes)

    client.getRowsWithColumns = counting
    second = [message("e2", "s2", recent_ms(30)), message("e3", "s3", recent_ms(20))]
    send(bus, second)
    run_until(job, 3)

    assert job.progress.spreads == 1
    assert sum(requested) == 2  # s2 and s3, the events' own rows
    now = recent_ms(0)
    for profile in ids:
        assert counter(reader, profile, "click", now) == pytest.approx(
            expected_counter(first + second, "click", now), rel=1e-9
        )


def one_batch_over_persons(bus, table, persons: int) -> list[tuple[bytes, bytes]]:
    """3,000 events sent over ``persons`` persons of three ids each, rows written."""
    people = [[f"b{p}-{i}" for i in range(3)] for p in range(persons)]
    for ids in people:
        write_person(table, ids)
    sent = traffic([i for ids in people for i in ids], 3000)
    send(bus, sent)
    return sent


def test_a_batch_is_applied_without_a_pass_of_the_cyclic_garbage_collector(
    bus, connection, table_name, job_for
):
    sent = one_batch_over_persons(bus, connection.table(table_name), 100)
    job = job_for(bus, max_poll_messages=len(sent))
    passes: list[list[int]] = []  # per batch applied: a loaded machine may split the events

    def seen(phase: str, info: dict) -> None:
        if phase == "start":
            passes[-1].append(info["generation"])

    apply = job.apply

    def watched(batch) -> None:
        gc.collect()  # the allocation counts start from nothing: a pass now is the batch's
        passes.append([])
        gc.callbacks.append(seen)
        try:
            apply(batch)
        finally:
            gc.callbacks.remove(seen)

    job.apply = watched
    run_until(job, len(sent))

    assert job.progress.events_applied == len(sent)
    # at most the one the first allocation after each batch runs
    assert all(len(during) <= 1 for during in passes), passes


def test_the_jobs_puts_are_written_at_once_not_through_the_gateways_pending_log(
    bus, connection, gateway, table_name, job_for
):
    sent = one_batch_over_persons(bus, connection.table(table_name), 400)
    # Every message is in the topic already: the poll waits for all of them (on a loaded
    # machine the default 0.2 s returned the first fetch alone, a batch below the threshold).
    job = job_for(bus, max_poll_messages=len(sent), poll_timeout_seconds=30.0)
    enqueued, _ = read_counters(gateway.data_dir)
    # With the job's own poll timeout (``run_until`` polls for 0.2 s).
    drive(job.step, lambda: job.progress.messages >= len(sent))

    assert job.progress.batches == 1 and job.progress.cells_written > 2 * DEFERRED_BATCH_MUTATIONS
    assert read_counters(gateway.data_dir)[0] == enqueued  # no batch went to the pending log
