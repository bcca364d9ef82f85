"""The main job on embedded defaults: generate a sample lake, materialize every asset, report.

Runs against the Dagster instance in ``$DAGSTER_HOME`` so that the runs it makes are the ones
``make ui`` shows afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from profile_assets.local_ui import with_lake_start_date
from profile_store.cli.argument_types import iso_date, positive_int, whole_number
from profile_store.lake.layout import LANDING
from resources.lake import LakeResource

if TYPE_CHECKING:
    from dagster import DagsterInstance

# Small enough for a first result in minutes, long enough for every capability: trimming over
# a trailing window, incremental identity days with merges, profile compaction, every check.
DEMO_DAYS = 3
# Many persons of a few events each: about half of the (app, event type) pairs, in every app, reach
# 4,000 to 13,000 users a day, past the sketches' exact-mode capacity (k = 4,096 at lg_k 12), so
# that the answers the demo shows and the accuracy check judges are mostly estimates with error
# bounds (see docs/benchmarks.md for what this costs the demo's time).
DEMO_EVENTS_PER_DAY = 200_000
DEMO_EVENTS_PER_PERSON = 2.0


def _events_per_person(text: str) -> float:
    """A mean of at least one event per active person (fewer would leave persons without any)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value >= 1.0:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def default_start(days: int, today: date | None = None) -> date:
    """The first of ``days`` days ending yesterday (UTC): every partition the UI shows after
    the demo is built, none waits in the future."""
    today = today or datetime.now(UTC).date()
    return today - timedelta(days=days)


def _print(line: str = "") -> None:
    print(line, flush=True)


def example_audiences(date_from: date, date_to: date) -> dict[str, dict]:
    """A few questions a marketer asks, over the sample days."""

    def leaf(app: str, event: str, **extra) -> dict:
        span = {"date_from": date_from.isoformat(), "date_to": date_to.isoformat()}
        return {"app_id": app, "event_type": event, **span, **extra}

    shop, game, news = "com.shopfast.android", "com.pixelquest.dragons", "com.dailyherald.reader"
    return {
        "shop: viewed items this week": leaf(shop, "view_item"),
        "shop: added shoes to cart >= 3 times AND viewed items BUT NOT purchased": {
            "difference": [
                {
                    "intersection": [
                        leaf(shop, "view_item"),
                        leaf(
                            shop, "add_to_cart", min_count=3, attributes={"product_type": "shoes"}
                        ),
                    ]
                },
                leaf(shop, "purchase"),
            ]
        },
        "game: watched ads AND bought in-app": {
            "intersection": [leaf(game, "ad_watched"), leaf(game, "iap_purchase")]
        },
        "news: read sports OR shared": {
            "union": [
                leaf(news, "article_view", attributes={"category": "sports"}),
                leaf(news, "share"),
            ]
        },
    }


def _print_audiences(lake_root: Path, days: list[date]) -> None:
    import contextlib

    from profile_store.audiences.engine import AudienceEngine
    from profile_store.audiences.exact import exact_leaf_users, exact_users
    from profile_store.audiences.query import QueryError, leaves, parse_query
    from profile_store.audiences.sketch_table import SKETCH_TABLE
    from resources import resources_from_env

    resources = resources_from_env()
    spark = resources["spark"].spark_session
    hbase = resources["hbase"]
    events = spark.read.parquet(str(lake_root / "events"))

    @contextlib.contextmanager
    def open_table():
        with hbase.connection() as connection:
            yield connection.table(SKETCH_TABLE)

    engine = AudienceEngine(open_table)
    try:
        for title, tree in example_audiences(days[0], days[-1]).items():
            try:
                answer = engine.estimate(tree)
            except QueryError as error:
                _print(f"  {title}: not answerable: {error}")
                continue
            query = parse_query(tree)
            exact = len(exact_users(query, exact_leaf_users(spark, events, leaves(query))))
            mode = "exact mode" if answer.exact else f"off by {answer.estimate - exact:+,.0f}"
            _print(
                f"  {title}\n      estimate {answer.estimate:>10,.0f}  "
                f"95% [{answer.lower_95:,.0f}, {answer.upper_95:,.0f}]  exact {exact:,}  "
                f"({mode}) {answer.rows_read} rows, {answer.elapsed_ms:.1f} ms"
            )
    finally:
        hbase.close()


DEMO_TENANT = "shopfast"  # examples/tenants.json
# Viewers are a large set (about 10,000 a day): the builder shows the saved audience's 95% range.
DEMO_AUDIENCE = "Viewed items, no purchase (last 2 days)"
DEMO_SEGMENT = "demo_viewed_no_purchase"


def _activate_demo_audience() -> None:
    """Save (once) and activate an audience, as the builder page's Save and Activate do, so
    that each day's run delivers its members to the profiles as a segment."""
    from profile_store.audiences.saved import AUDIENCE_TABLE, Activation, SavedAudiences
    from profile_store.audiences.saved import ensure_table as ensure_audience_table
    from profile_store.hbase.pool import table_opener
    from resources import resources_from_env

    shop = "com.shopfast.android"
    tree = {
        "difference": [
            {"app_id": shop, "event_type": "view_item", "last_days": 2},
            {"app_id": shop, "event_type": "purchase", "last_days": 2},
        ]
    }
    hbase = resources_from_env()["hbase"]
    try:
        with hbase.connection() as connection:
            ensure_audience_table(connection)
        store = SavedAudiences(table_opener(hbase.pool(), AUDIENCE_TABLE))
        # 90 days: still live when the profiles are read weeks after the sample days.
        activation = Activation(DEMO_SEGMENT, 90)
        saved = {a.name: a for a in store.list(DEMO_TENANT)}
        if DEMO_AUDIENCE in saved:
            store.update(DEMO_TENANT, saved[DEMO_AUDIENCE].id, query=tree, activation=activation)
        else:
            store.create(DEMO_TENANT, DEMO_AUDIENCE, tree, activation)
    finally:
        hbase.close()


def _activation_lines(metadata: dict) -> list[str]:
    lines = []
    for entry in metadata.get("audiences", []):
        if "skipped" in entry:
            lines.append(f"'{entry['audience']}' skipped: {entry['skipped']}")
        elif entry.get("sketch_estimate") is not None:
            lines.append(
                f"'{entry['audience']}' -> segment {entry['segment']}: {entry['members']:,} "
                f"members exactly (sketch {entry['sketch_estimate']:,}, 95% "
                f"[{entry['sketch_lower_95']:,}, {entry['sketch_upper_95']:,}])"
            )
        else:
            lines.append(
                f"'{entry['audience']}' -> segment {entry['segment']}: {entry['members']:,} members"
            )
    return lines


def _print_profiles(lake_root: Path, days: list[date], persons: int = 3) -> None:
    """A few persons of several ids, each read back from HBase through every one of its ids."""
    from profile_assets.live_demo import persons_by_master
    from profile_store.hbase.pool import table_opener
    from profile_store.profiles.pipeline import end_of_day_ms
    from profile_store.profiles.reads import ProfileReader
    from profile_store.profiles.table import PROFILE_TABLE
    from resources import resources_from_env

    hbase = resources_from_env()["hbase"]
    reader = ProfileReader(table_opener(hbase.pool(), PROFILE_TABLE))
    as_of = end_of_day_ms(days[-1])
    components = persons_by_master(lake_root)
    activated = _demo_segment_members(lake_root, days[-1])
    shown = 0
    try:
        by_size = sorted(components.items(), key=lambda item: (-len(item[1]), item[0]))
        # One person of the activated audience first, then the largest persons.
        by_size.sort(key=lambda item: not (set(item[1]) & activated))
        for master, ids in by_size:
            read = [reader.profile(profile, now_ms=as_of) for profile in sorted(ids)]
            views = [view for view in read if view is not None]
            if read[0] is None or not views[0].segments or shown == persons:
                continue
            shown += 1
            first = views[0]
            counters = ", ".join(
                f"{event} {value:.2f}"
                for event, value in sorted(first.counters.items(), key=lambda c: -c[1])[:4]
            )
            _print(f"  person with {len(ids)} ids, master {master}")
            _print(f"      segments  {', '.join(first.segments)}")
            _print(f"      counters  {counters}  (decayed to the end of {days[-1]})")
            for view in views:
                same = "same" if view.segments == first.segments else "DIFFERENT"
                role = "master" if view.is_master else f"-> {view.master}"
                _print(f"      via {view.id_type:<6} {view.profile:<40} {role:<10} {same} segments")
            if len(ids) >= 2:
                pair = reader.connected(sorted(ids)[-1], sorted(ids)[-2])
                _print(f"      connected({pair.a}, {pair.b}) = {pair.connected}  (one round trip)")
    finally:
        hbase.close()


def _demo_segment_members(lake_root: Path, day: date) -> set[str]:
    import pyarrow.parquet as pq

    from profile_store.lake.layout import AUDIENCE_ACTIVATIONS, day_dir

    area = lake_root / day_dir(AUDIENCE_ACTIVATIONS, day)
    if not area.exists():
        return set()
    rows = pq.read_table(area, columns=["profile", "segment"]).to_pylist()
    return {row["profile"] for row in rows if row["segment"] == DEMO_SEGMENT}


def _counted(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def _person_to_forget(lake_root: Path) -> list[str]:
    """The ids of a small person (2-3 ids) seen on the fewest days: a short erasure to watch."""
    import pyarrow.parquet as pq

    from profile_assets.live_demo import persons_by_master
    from profile_store.lake.layout import IDENTITY_PROFILES

    components = persons_by_master(lake_root)
    seen_days: dict[str, int] = {}
    for folder in sorted((lake_root / IDENTITY_PROFILES).glob("date=*")):
        for profile in pq.read_table(folder, columns=["profile"]).column("profile").to_pylist():
            seen_days[profile] = seen_days.get(profile, 0) + 1
    small = [sorted(ids) for ids in components.values() if 2 <= len(ids) <= 3]
    return min(small, key=lambda ids: (sum(seen_days.get(i, 0) for i in ids), ids))


def _forget_a_person(lake_root: Path, instance) -> bool:
    """``profiles forget`` one id of a person, then one run of the erasure job; True if clean."""
    from profile_assets.definitions import defs
    from profile_assets.demo_progress import run_partition
    from profile_store.erasure.forget import forget
    from profile_store.erasure.requests import GivenId
    from profile_store.hbase.pool import table_opener
    from profile_store.profiles.reads import ProfileReader
    from profile_store.profiles.table import PROFILE_TABLE
    from resources import resources_from_env

    ids = _person_to_forget(lake_root)
    hbase = resources_from_env()["hbase"]
    try:
        reader = ProfileReader(table_opener(hbase.pool(), PROFILE_TABLE))
        before = reader.segments(ids[0])
        storage = resources_from_env()["lake"].storage()
        result = forget(storage, table_opener(hbase.pool(), PROFILE_TABLE), [GivenId(ids[0])])
        after = [reader.segments(i) for i in ids]
    finally:
        hbase.close()
    immediate = result.request.immediate
    _print(
        f"  profiles forget {ids[0]}  -> request {result.request.request_id}: the person's "
        f"{result.profiles_resolved} ids resolved, {immediate['profile_rows_deleted']} profile, "
        f"{immediate['lookup_rows_deleted']} lookup and {immediate['edge_rows_deleted']} edge rows "
        "deleted at once"
    )
    shown = ", ".join(before.segments) if before and before.segments else "no live segments"
    gone = all(view is None for view in after)
    _print(
        f"  a bidder reading any of their {len(ids)} ids: before {shown}; now "
        + ("no profile row" if gone else "STILL A ROW")
    )
    t0 = time.monotonic()
    outcome = run_partition(defs.resolve_job_def("erasure_job"), None, instance)
    (report,) = outcome["assets"].get("erasure", {}).get("reports", [None])
    if not outcome["success"] or report is None:
        _print("  erasure run FAILED (see the run in the Dagster UI)")
        return False
    batch = report["batch"]
    _print(
        f"  erasure run: {_counted(sum(report['rows_removed'].values()), 'row')} removed from "
        f"{_counted(len(batch['partitions_rewritten']), 'lake partition')}, "
        f"{_counted(len(batch['component_days_recomputed']), 'identity day')} recomputed, "
        f"{_counted(len(report['sketch_days_rebuilt']), 'sketch day')} rebuilt: "
        f"{report['sketch_rows_retaining']} of {batch['sketch_rows_checked']:,} sketch rows "
        f"retain their hashes, major compaction {batch['hbase_major_compaction']['state']} "
        f"({time.monotonic() - t0:.1f}s); report in {lake_root / 'erasure' / 'reports'}"
    )
    return gone and report["sketch_rows_retaining"] == 0


def demo_instance() -> DagsterInstance:
    """The Dagster instance of ``$DAGSTER_HOME`` (a temporary one without it), its
    *Auto-materialize* switch following ``automation_sensor``: whichever way the UI is opened
    on it afterwards (``make ui``, ``dagster dev``, ``dagster-webserver``), the job page does
    not say "off" beside the running sensor."""
    from dagster import DagsterInstance

    from sensors.automation_sensor import automation_tag_follows_the_sensor

    home = os.environ.get("DAGSTER_HOME")
    instance = DagsterInstance.get() if home else DagsterInstance.ephemeral()
    automation_tag_follows_the_sensor(instance)
    return instance


def show_real_time(
    lake_root: Path, days: list[date], instance: DagsterInstance | None = None
) -> bool:
    """Kafka started, then ``profiles stream live-profiles`` and ``profiles serve``; a purchase
    sent for one id of a person of the last day, read from another id (``live_demo``). True if
    it showed within the bound; Kafka and the commands are stopped either way. With
    ``instance``, observations of ``event_stream`` are recorded there while the stream runs."""
    import shutil
    import tempfile

    from profile_assets.live_demo import (
        SEGMENT,
        SEGMENT_RULE,
        SLOW_STOP_S,
        VISIBLE_TIMEOUT_S,
        LiveCommands,
        LiveDemoError,
        ids_seen_on,
        observations_line,
        persons_by_master,
        pick_person,
        send_and_watch,
        tenant_key,
        today_is_live,
    )
    from profile_store.event_bus.settings import EventBusSettings
    from profile_store.event_bus.topics import TopicError, ensure_topic
    from profile_store.hbase.pool import table_opener
    from profile_store.launchers.kafka_broker import KafkaBroker, KafkaStartError
    from profile_store.profiles.reads import ProfileReader
    from profile_store.profiles.table import PROFILE_TABLE
    from resources import resources_from_env

    if not today_is_live(days[-1]):
        _print(
            f"  skipped: the demo's days end on {days[-1]}, so the daily state already counts "
            "today and the live job leaves today's events to the daily run"
        )
        return True
    started = time.monotonic()
    hbase = resources_from_env()["hbase"]
    reader = ProfileReader(table_opener(hbase.pool(), PROFILE_TABLE))
    work = Path(tempfile.mkdtemp(prefix="live-demo-", dir=lake_root.parent))
    broker = KafkaBroker(work / "kafka")
    slow_stops: list[str] = []
    try:
        seen = ids_seen_on(lake_root, days[-1])
        person = pick_person(reader, persons_by_master(lake_root), seen)
        if person is None:
            raise LiveDemoError(f"no person of 2+ ids active on {days[-1]} is outside {SEGMENT}")
        if SEGMENT_RULE.app_id is None:
            raise LiveDemoError(f"the {SEGMENT} segment's rule names no app")
        key = tenant_key(SEGMENT_RULE.app_id)
        t0 = time.monotonic()
        broker.start()
        settings = EventBusSettings(bootstrap_servers=broker.bootstrap_servers)
        ensure_topic(settings)
        _print(
            f"  Apache Kafka {broker.version} (one KRaft node) on {broker.bootstrap_servers}, "
            f"topic {settings.topic!r}: up in {time.monotonic() - t0:.1f}s"
        )
        t0 = time.monotonic()
        live = LiveCommands(settings, hbase.address, lake_root, work / "logs", instance=instance)
        with live as commands:
            _print(
                f"  profiles stream live-profiles (group {commands.group_id}) and profiles serve "
                f"({commands.url}): up in {time.monotonic() - t0:.1f}s"
            )
            _print(
                f"  person of {len(person.ids)} ids, master {person.master}, not in {SEGMENT}: "
                f"events for {person.sent_to.profile} ({person.sent_to.id_type}), reads of "
                f"{person.read_from.profile} ({person.read_from.id_type})"
            )
            outcome = send_and_watch(commands, reader, person, key)
        sent = outcome.events
        _print(
            f"  POST /v1/events (key {key}): {', '.join(e['event_type'] for e in sent)} "
            f"at {sent[0]['event_time']} for {person.sent_to.profile}"
        )
        _print(f"      -> {outcome.status} {json.dumps(outcome.answer)}")
        _print(
            f"  segments({person.read_from.profile}), another id of the person: {SEGMENT} "
            f"visible {outcome.seconds_to_visible:.2f}s after the 202 (now "
            f"{', '.join(outcome.after.segments)}; before "
            f"{', '.join(outcome.before.segments) or 'none'})"
        )
        counters = ", ".join(
            f"{event} {outcome.before.counters.get(event, 0.0):.2f} -> "
            f"{outcome.after.counters.get(event, 0.0):.2f}"
            for event in dict.fromkeys(e["event_type"] for e in sent)
        )
        _print(f"      counters  {counters}")
        _print(f"  live job stopped: {outcome.job_summary}")
        if commands.observer is not None:
            _print(f"  {observations_line(commands.observer)}")
        slow_stops = live.slow_stops()
        for slow in slow_stops:
            _print(f"  WARNING: {slow}")
        succeeded = True
    except (KafkaStartError, TopicError, LiveDemoError) as error:
        _print(f"  FAILED (the bound is {VISIBLE_TIMEOUT_S:.0f}s): {error}")
        succeeded = False
    finally:
        stopping = time.monotonic()
        broker.stop()
        broker_stop_s = time.monotonic() - stopping
        hbase.close()
    if broker_stop_s > SLOW_STOP_S:
        _print(f"  WARNING: Kafka took {broker_stop_s:.1f}s to stop on SIGTERM")
    if succeeded:
        # A slow stop's logs are kept to be read; otherwise the whole directory goes.
        shutil.rmtree(broker.data_dir if slow_stops else work, ignore_errors=True)
        kept = f"; the commands' logs kept in {work / 'logs'}" if slow_stops else ""
        _print(
            f"  Kafka stopped, its data removed{kept} ({time.monotonic() - started:.1f}s in all)"
        )
    else:
        _print(f"  Kafka stopped; its data and the commands' logs kept in {work}")
    return succeeded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--days", type=positive_int, default=DEMO_DAYS, help="days (default: %(default)s)"
    )
    parser.add_argument(
        "--events-per-day",
        type=positive_int,
        default=DEMO_EVENTS_PER_DAY,
        help="generated events per day (default: %(default)s)",
    )
    parser.add_argument(
        "--events-per-person",
        type=_events_per_person,
        default=DEMO_EVENTS_PER_PERSON,
        help="mean events of a person active on a day (default: %(default)s)",
    )
    parser.add_argument("--seed", type=whole_number, default=7, help="generator seed (default: 7)")
    parser.add_argument(
        "--start-date",
        type=iso_date,
        default=None,
        help="first day, YYYY-MM-DD (default: the days ending yesterday, UTC)",
    )
    parser.add_argument(
        "--regenerate", action="store_true", help="Write the sample lake again even if present."
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    lake = LakeResource.from_env()
    if lake.is_s3:
        parser.error("the demo writes its sample lake locally; unset PROFILES_LAKE_ROOT")
    lake_root = Path(lake.root).resolve()
    start = args.start_date or default_start(args.days)
    days = [start + timedelta(days=i) for i in range(args.days)]

    _print("== Ad-tech profile platform: demo on embedded defaults ==")
    # Dagster, Spark and Great Expectations take seconds to import: the first line comes first.
    from profile_assets.automation_conditions import WHOLE_DAY_RUN_TAGS
    from profile_assets.definitions import defs
    from profile_assets.demo_progress import run_partition
    from profile_store.generator import generate_lake

    _print(f"lake: {lake_root}   Dagster home: {os.environ.get('DAGSTER_HOME', '(temporary)')}")
    landing_present = all((lake_root / LANDING / f"date={d}" / "_SUCCESS").exists() for d in days)
    if landing_present and not args.regenerate:
        _print(f"[1/2] sample lake already generated for {days[0]}..{days[-1]} (--regenerate)")
    else:
        _print(
            f"[1/2] generating {args.days} days x {args.events_per_day:,} events "
            f"(seed {args.seed}) ..."
        )
        t0 = time.monotonic()
        summary = generate_lake(
            lake_root,
            days=args.days,
            events_per_day=args.events_per_day,
            seed=args.seed,
            start_date=start,
            events_per_person=args.events_per_person,
            on_day=lambda day: _print(
                f"      {day.date}  {day.lines:>9,} lines  {day.malformed:>5,} malformed  "
                f"{day.duplicates:>5,} duplicates  ({day.seconds:.1f}s)"
            ),
        )
        _print(
            f"      {summary.events:,} events, {summary.persons:,} persons, "
            f"{summary.devices:,} ids in {time.monotonic() - t0:.1f}s"
        )

    # Partitions are fixed when the definitions load (below): from the lake's first day, as
    # `make ui` shows them.
    os.environ.update(with_lake_start_date(os.environ))
    _print(f"[2/2] materializing every asset for {len(days)} day partitions ...")
    _activate_demo_audience()
    _print(f"      saved and activated the audience '{DEMO_AUDIENCE}' ({DEMO_TENANT})")
    instance = demo_instance()
    job = defs.resolve_job_def("daily_pipeline")
    failures = 0
    totals = {"clean": 0, "quarantined": 0, "duplicates": 0}
    for number, day in enumerate(days, start=1):
        t0 = time.monotonic()
        _print(f"    day {number}/{len(days)}  {day}")
        # The day's report below says what a step's warning would (an audience not activated,
        # a check's verdict), in the demo's words: the run's own log shows only its errors.
        outcome = run_partition(
            job, day.isoformat(), instance, WHOLE_DAY_RUN_TAGS, console_level="ERROR"
        )
        raw = outcome["assets"].get("raw_events", {})
        failed_checks = [name for name, passed in outcome["checks"].items() if not passed]
        failures += (not outcome["success"]) + len(failed_checks)
        totals["clean"] += raw.get("dagster/row_count", 0)
        totals["quarantined"] += raw.get("quarantined_rows", 0)
        totals["duplicates"] += raw.get("duplicates_dropped", 0)
        status = "ok" if outcome["success"] and not failed_checks else "FAILED"
        _print(
            f"      {day}  {status:6}  events {raw.get('dagster/row_count', 0):>9,}  "
            f"quarantined {raw.get('quarantined_rows', 0):>6,}  "
            f"duplicates {raw.get('duplicates_dropped', 0):>5,}  "
            f"checks {sum(outcome['checks'].values())}/{len(outcome['checks'])} passed  "
            f"({time.monotonic() - t0:.1f}s)"
        )
        edges = outcome["assets"].get("identity_edges", {})
        components = outcome["assets"].get("identity_components", {})
        merges = components.get("merges", 0)
        multi = components.get("component_merges", 0)
        _print(
            f"        identity: {edges.get('dagster/row_count', 0):>7,} graph edges from the day, "
            f"{edges.get('quarantined_keys', 0):,} keys quarantined; "
            f"{components.get('components', 0):,} persons with 2+ ids "
            f"({components.get('mode', '?')}: {components.get('profiles_touched', 0):,} ids "
            f"recomputed, {merges:,} known person{'' if merges == 1 else 's'} merged into another, "
            f"{multi:,} of them with 2+ ids)"
        )
        profiles = outcome["assets"].get("compacted_profiles", {})
        _print(
            f"        profiles: {profiles.get('dagster/row_count', 0):>7,} profile rows rewritten "
            f"for {profiles.get('components_rewritten', 0):,} persons "
            f"({profiles.get('mode', '?')}), {profiles.get('lookup_rows_written', 0):,} lookup "
            f"rows, {profiles.get('edge_rows_written', 0):,} edge rows"
        )
        for line in _activation_lines(outcome["assets"].get("audience_activations", {})):
            _print(f"        activation: {line}")
        if failed_checks:
            _print(f"        failed checks: {', '.join(failed_checks)}")

    _print()
    _print("== Audience questions, answered from HBase sketches (exact answer from Spark) ==")
    _print_audiences(lake_root, days)

    _print()
    _print("== Persons, read from the HBase profiles table through each of their ids ==")
    _print_profiles(lake_root, days)

    _print()
    _print("== Forgetting a person: HBase at once, then the lake, identity graph and sketches ==")
    failures += not _forget_a_person(lake_root, instance)

    _print()
    _print("== Real time: an event reaches a bidder's read within seconds ==")
    failures += not show_real_time(lake_root, days, instance)

    _print()
    _print("== What was produced ==")
    _print(f"clean events      {totals['clean']:>12,}  -> {lake_root / 'events'}")
    _print(f"quarantined rows  {totals['quarantined']:>12,}  -> {lake_root / 'quarantine'}")
    _print(f"duplicates dropped{totals['duplicates']:>12,}")
    _print(f"identity graph                  -> {lake_root / 'identity_components'}/date=D")
    _print(f"ground truth                    -> {lake_root / 'ground_truth'}")
    _print()
    _print("Open the Dagster UI on these runs:  make ui   then browse http://127.0.0.1:3000")
    _print(
        "Build audiences in the browser:      .venv/bin/profiles serve --tenants "
        "examples/tenants.json   then http://127.0.0.1:8080 (key shopfast-3b8f0d6c1a9e4f27)"
    )
    _print(f"Total wall time: {time.monotonic() - started:.0f}s")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
