"""The demo's real-time act: events sent for one id of a person reach a bidder's read of another
id of the person within seconds, through the commands a user runs.

``profiles stream live-profiles`` and ``profiles serve`` run as child processes on the demo's
HBase and a Kafka broker; a short shopping session of now (view, cart, purchase) for one id of
a person of the last day goes through the collector (``POST /v1/events`` with a tenant's key),
and ``segments`` of another id of the person is read until the purchase's segment shows. The
events are of today (UTC) because the live job applies only the days a person's daily state
does not count yet, and the demo's days end yesterday. Given a Dagster instance, the launcher
records observations of ``event_stream`` into it while the stream runs (no daemon ticks the
sensor during the demo), the last once the job has committed the events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import IO

from confluent_kafka.admin import AdminClient
from dagster import DagsterInstance

from profile_assets.stream_observer import DEFAULT_INTERVAL_S, StreamObserver
from profile_store.event_bus.settings import EventBusSettings
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.lake.layout import IDENTITY_PROFILES, day_dir
from profile_store.lake.storage import LocalLakeStorage
from profile_store.launchers.child_processes import Stopped, log_tail, stop_processes
from profile_store.profiles.reads import ProfileReader, ProfileView, current_ms
from profile_store.profiles.segment_rules import DEFAULT_RULES, parse_rules
from profile_store.realtime.consumer_probe import (
    METRICS_URLS_VARIABLE,
    ConsumerReport,
    probe_consumer,
)
from profile_store.realtime.live_profiles import DEFAULT_GROUP_ID
from profile_store.realtime.stream_lag import GROUPS_VARIABLE

# A purchase puts a person in it from one event: a rule of DEFAULT_RULES, the rules in force
# in the demo's lake (it has no rules file: `profiles segment-rules show`), which the daily
# compaction and the live job both read there.
SEGMENT = "buyers"
(SEGMENT_RULE,) = (rule for rule in parse_rules(DEFAULT_RULES) if rule.segment == SEGMENT)
TENANTS_FILE = Path(__file__).resolve().parents[1] / "examples" / "tenants.json"
VISIBLE_TIMEOUT_S = 60.0
START_TIMEOUT_S = 120.0
_POLL_S = 0.05


class LiveDemoError(RuntimeError):
    """The real-time act could not be shown; the message says which step failed and why."""


@dataclass(frozen=True)
class LivePerson:
    """A person of 2+ ids outside ``SEGMENT``: the events go to one id, the reads to another."""

    master: str
    ids: tuple[str, ...]
    sent_to: ProfileView
    read_from: ProfileView


@dataclass(frozen=True)
class LiveOutcome:
    person: LivePerson
    events: list[dict]
    status: int  # the collector's answer to the events
    answer: dict
    seconds_to_visible: float  # from the collector's answer to the first read showing SEGMENT
    before: ProfileView  # ``read_from`` when the person was picked, before the events
    after: ProfileView  # ``read_from`` once it shows them
    job_summary: str  # the live job's last line: what it applied


def today_is_live(last_day: date, today: date | None = None) -> bool:
    """Whether events of today can show live after demo days ending on ``last_day``: the
    daily state then counts up to ``last_day``, and the live job applies only later days."""
    return last_day < (today or datetime.now(UTC).date())


def persons_by_master(lake_root: Path) -> dict[str, list[str]]:
    """The persons of 2+ ids of the latest identity assignment: master -> ids."""
    import pyarrow.parquet as pq

    latest = latest_assignment_dir(LocalLakeStorage(lake_root))
    if latest is None:
        return {}
    persons: dict[str, list[str]] = {}
    for row in pq.read_table(lake_root / latest, columns=["profile", "master"]).to_pylist():
        persons.setdefault(row["master"], []).append(row["profile"])
    return persons


def ids_seen_on(lake_root: Path, day: date) -> set[str]:
    """The ids with events on ``day`` (the identity run's profiles of the day)."""
    import pyarrow.parquet as pq

    folder = lake_root / day_dir(IDENTITY_PROFILES, day)
    if not folder.exists():
        return set()
    return set(pq.read_table(folder, columns=["profile"]).column("profile").to_pylist())


def pick_person(
    reader: ProfileReader,
    persons: dict[str, list[str]],
    seen: set[str],
    segment: str = SEGMENT,
    most_tried: int = 500,
) -> LivePerson | None:
    """The first person (by master) with an id in ``seen`` whose every id has a profile row
    and none is in ``segment`` yet: the segment appearing can only be the events' doing."""
    candidates = sorted(m for m, ids in persons.items() if len(ids) >= 2 and seen & set(ids))
    now_ms = current_ms()
    for master in candidates[:most_tried]:
        ids = tuple(sorted(persons[master]))
        views = [reader.profile(profile, now_ms=now_ms) for profile in ids]
        if any(view is None or segment in view.segments for view in views):
            continue
        rows = [view for view in views if view is not None]
        # The events for an id other than the master, the read of an id of another kind if
        # there is one (an app's phone id sends, a web cookie is read), else of another id.
        sent_to = next((v for v in rows if not v.is_master), rows[0])
        others = [v for v in rows if v.profile != sent_to.profile]
        read_from = next((v for v in others if v.id_type != sent_to.id_type), others[0])
        return LivePerson(master, ids, sent_to, read_from)
    return None


def tenant_key(app_id: str, tenants_file: Path = TENANTS_FILE) -> str:
    """The first API key of the first tenant of ``tenants_file`` that may send ``app_id``."""
    config = json.loads(tenants_file.read_text())
    for tenant in config.get("tenants", []):
        if app_id in tenant.get("app_ids", []) and tenant.get("api_keys"):
            return tenant["api_keys"][0]
    raise LiveDemoError(f"{tenants_file}: no tenant with an API key may send app_id {app_id!r}")


def shopping_session(view: ProfileView, at: datetime) -> list[dict]:
    """An item viewed, put in the cart and bought in ``SEGMENT_RULE``'s app, by ``view``'s id
    at ``at``: the purchase matches the rule, the other two its neighbours (shoppers, shoe
    lovers)."""
    stamp = at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{at.microsecond // 1000:03d}Z"
    item = {"product_type": "shoes", "color": "red", "sku": "SKU-LIVE-1", "price": "89.90"}
    steps = [
        ("view_item", item),
        ("add_to_cart", {**item, "quantity": "1"}),
        (SEGMENT_RULE.event_type, {**item, **SEGMENT_RULE.attributes, "order_id": "live-1"}),
    ]
    return [
        {
            "event_id": f"live-demo-{uuid.uuid4().hex}",
            "app_id": SEGMENT_RULE.app_id,
            "user_id": view.profile,
            "id_type": view.id_type,
            "event_time": stamp,
            "event_type": event_type,
            "event_attributes": attributes,
        }
        for event_type, attributes in steps
    ]


def post_events(url: str, key: str, events: list[dict], timeout: float = 30.0) -> tuple[int, dict]:
    """``POST /v1/events`` as JSON lines; the status and the answer's body."""
    body = b"\n".join(json.dumps(event, separators=(",", ":")).encode() for event in events)
    request = urllib.request.Request(
        f"{url}/v1/events",
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-ndjson", "X-API-Key": key},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, {"message": error.read().decode("utf-8", "replace")[:500]}
    except (urllib.error.URLError, OSError) as error:
        raise LiveDemoError(f"POST {url}/v1/events: {getattr(error, 'reason', error)}") from None


def group_is_assigned(
    admin: AdminClient, settings: EventBusSettings, group_id: str, timeout: float = 5.0
) -> bool:
    """True once a member of ``group_id`` holds partitions of the topic: from then on an event
    sent is read at once, so the time measured is the path's, not the job's start-up."""
    try:
        (future,) = admin.describe_consumer_groups([group_id], request_timeout=timeout).values()
        description = future.result(timeout)
    except Exception:  # the group does not exist yet, or the broker is slow to answer
        return False
    return any(
        partition.topic == settings.topic
        for member in description.members
        for partition in (member.assignment.topic_partitions or [])
    )


STOP_TIMEOUT_S = 60.0
"""How long the children have to exit on SIGTERM before they are killed."""
SLOW_STOP_S = 5.0
"""A child that takes longer to stop is reported (``LiveCommands.slow_stops``)."""
COMMANDS = {"live-profiles": "profiles stream live-profiles", "serve": "profiles serve"}


class LiveCommands:
    """``profiles stream live-profiles`` and ``profiles serve`` as child processes on one HBase
    and one Kafka topic, each logging to a file of ``log_dir``; ready once the service listens,
    the job's metrics listener is up and its consumer group holds the topic's partitions.

    With ``instance``, observations of ``event_stream`` (the job's group and its own report)
    are recorded there from the moment they are ready until just before they stop, every
    ``observe_every_s``."""

    def __init__(
        self,
        settings: EventBusSettings,
        hbase: tuple[str, int],
        lake_root: Path,
        log_dir: Path,
        *,
        group_id: str = DEFAULT_GROUP_ID,
        tenants_file: Path = TENANTS_FILE,
        start_timeout_s: float = START_TIMEOUT_S,
        instance: DagsterInstance | None = None,
        observe_every_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        self.settings = settings
        self.group_id = group_id
        self.log_dir = log_dir
        self.start_timeout_s = start_timeout_s
        host, port = hbase
        self._hbase_flags = ["--hbase-host", host, "--hbase-port", str(port)]
        self._lake = str(lake_root)
        self._tenants = str(tenants_file)
        self._logs: dict[str, IO[bytes]] = {}
        self._processes: dict[str, subprocess.Popen[bytes]] = {}
        self.url: str | None = None
        self.metrics_url: str | None = None  # the live job's listener
        self.instance = instance
        self.observe_every_s = observe_every_s
        self.observer: StreamObserver | None = None
        self._observing = False
        self.stopped: dict[str, Stopped] = {}
        """How each child ended at ``stop``, by name."""

    def _environment(self) -> dict[str, str]:
        """Ours, with this broker and topic instead of any Kafka the shell points at."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILES_KAFKA_")}
        env["PROFILES_KAFKA_BOOTSTRAP_SERVERS"] = self.settings.bootstrap_servers
        env["PROFILES_KAFKA_TOPIC"] = self.settings.topic
        return env

    def _spawn(self, name: str, arguments: list[str]) -> None:
        log = open(self.log_dir / f"{name}.log", "wb")  # noqa: SIM115 - lives with the child
        self._logs[name] = log
        self._processes[name] = subprocess.Popen(
            [sys.executable, "-m", "profile_store.cli", *arguments, *self._hbase_flags],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self._environment(),
        )

    def observed_environment(self) -> dict[str, str]:
        """What the observations measure: this topic, the job's group and its listener."""
        env = self._environment()
        env[GROUPS_VARIABLE] = self.group_id
        if self.metrics_url is not None:
            env[METRICS_URLS_VARIABLE] = self.metrics_url
        return env

    def log(self, name: str) -> str:
        return (self.log_dir / f"{name}.log").read_text(errors="replace")

    def check_running(self) -> None:
        """Raises ``LiveDemoError`` with the log's tail of a child that exited."""
        for name, process in self._processes.items():
            if process.poll() is not None:
                raise LiveDemoError(
                    f"{name} exited ({process.returncode}):\n"
                    + log_tail([self.log_dir / f"{name}.log"], 20)
                )

    def start(self) -> LiveCommands:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._spawn(
                "live-profiles",
                [
                    *("stream", "live-profiles", "--lake", self._lake),
                    *("--group-id", self.group_id, "--metrics-port", "0"),
                ],
            )
            self._spawn(
                "serve",
                ["serve", "--port", "0", "--tenants", self._tenants, "--lake", self._lake],
            )
            # Silent: it outlives the start, and would log Kafka's disconnects when it stops.
            admin = AdminClient(
                {"bootstrap.servers": self.settings.bootstrap_servers, "log_level": 0}
            )
            deadline = time.monotonic() + self.start_timeout_s
            assigned = False
            while self.url is None or self.metrics_url is None or not assigned:
                self.check_running()
                if time.monotonic() > deadline:
                    steps = [
                        ("the service to listen", self.url is not None),
                        ("the job's metrics listener", self.metrics_url is not None),
                        ("the job's group", assigned),
                    ]
                    waiting = next(what for what, done in steps if not done)
                    raise LiveDemoError(
                        f"waited {self.start_timeout_s:.0f} s for {waiting}; logs in {self.log_dir}"
                    )
                if self.url is None:
                    self.url = _listening_url(self.log("serve"))
                if self.metrics_url is None:
                    self.metrics_url = _metrics_url(self.log("live-profiles"))
                assigned = assigned or group_is_assigned(admin, self.settings, self.group_id)
                time.sleep(0.1)
            if self.instance is not None:
                self.observer = StreamObserver(
                    self.instance, self.observed_environment(), self.observe_every_s
                )
                self.observer.start()
                self._observing = True
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> str:
        """The last observation, then SIGTERM both (the job finishes its batch in hand); the
        job's last summary line. Raises ``LiveDemoError`` when the job did not exit 0."""
        try:
            if self._observing and self.observer is not None:
                self._observing = False
                self.observer.stop()
        finally:
            self.stopped.update(stop_processes(self._processes, STOP_TIMEOUT_S))
        codes = {name: self.stopped[name].code for name in self._processes}
        self._processes.clear()
        for log in self._logs.values():
            log.close()
        self._logs.clear()
        if "live-profiles" not in codes:
            return ""
        lines = [line for line in self.log("live-profiles").splitlines() if "stopped:" in line]
        if codes["live-profiles"] != 0:
            raise LiveDemoError(
                f"profiles stream live-profiles exited {codes['live-profiles']}:\n"
                + log_tail([self.log_dir / "live-profiles.log"], 20)
            )
        return lines[-1].split("live profiles stopped: ", 1)[-1] if lines else ""

    def slow_stops(self) -> list[str]:
        """The children that took more than ``SLOW_STOP_S`` to exit on SIGTERM, or had to be
        killed, each with its log's tail: a service must stop well within a deployment's kill
        timeout."""
        return [
            f"{COMMANDS[name]} "
            + (
                f"did not exit within {STOP_TIMEOUT_S:.0f} s of SIGTERM and was killed"
                if stopped.killed
                else f"took {stopped.seconds:.1f} s to exit on SIGTERM"
            )
            + f" (exit code {stopped.code}); its log ends:\n"
            + log_tail([self.log_dir / f"{name}.log"], 10)
            for name, stopped in self.stopped.items()
            if stopped.killed or stopped.seconds > SLOW_STOP_S
        ]

    def __enter__(self) -> LiveCommands:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def observations_line(observer: StreamObserver) -> str:
    """What the demo says of the observations it recorded: how many, and the last one's lag,
    events committed and newest event per group and job."""
    last = observer.last
    if last is None:
        return "event_stream: no observation recorded"
    parts = [
        f"{group.group} lag {group.lag:,}, newest event {group.newest_event_time}"
        if group.started
        else f"{group.group} not started"
        for group in last.groups
    ]
    parts += [
        f"{report.name}: {report.events:,} events committed, ready {report.ready}"
        if report.error is None
        else f"{report.name}: {report.error}"
        for report in last.consumers
    ]
    if last.error is not None:
        parts.append(f"Kafka unreachable: {last.error}")
    return (
        f"event_stream: {observer.recorded} observations recorded in the Dagster instance; "
        f"the last: {'; '.join(parts)}"
    )


def _listening_url(log: str) -> str | None:
    marker = "Uvicorn running on "
    if marker not in log:
        return None
    return log.split(marker, 1)[1].split()[0]


def _metrics_url(log: str) -> str | None:
    """The base URL of the listener that ``--metrics-port 0`` picked, from the job's log."""
    marker = "metrics on "
    if marker not in log:
        return None
    return log.split(marker, 1)[1].split()[0].removesuffix("/metrics")


def wait_until_committed(
    commands: LiveCommands, events: int, timeout_s: float, since: float
) -> None:
    """Until the live job reports ``events`` committed (its offsets past them): the stream's
    last observation then shows what the events did, not a batch in flight."""
    url = commands.metrics_url
    if url is None:
        raise RuntimeError("the live commands are not started")
    last = [ConsumerReport(url, error="not asked yet")]

    def committed() -> bool:
        last[0] = probe_consumer(url)
        return last[0].events is not None and last[0].events >= events

    _poll(
        commands,
        committed,
        since,
        timeout_s,
        lambda: (
            f"the live job did not report its {events} events committed within "
            f"{timeout_s:.0f} s ({last[0].error or f'{last[0].events} committed'}; log: "
            f"{commands.log_dir / 'live-profiles.log'})"
        ),
    )


def _poll(
    commands: LiveCommands,
    done: Callable[[], bool],
    since: float,
    timeout_s: float,
    why: Callable[[], str],
) -> None:
    """Until ``done()``, the children checked between tries; ``LiveDemoError(why())`` once
    ``timeout_s`` have passed since ``since``."""
    while not done():
        commands.check_running()
        if time.monotonic() - since > timeout_s:
            raise LiveDemoError(why())
        time.sleep(_POLL_S)


def send_and_watch(
    commands: LiveCommands,
    reader: ProfileReader,
    person: LivePerson,
    key: str,
    *,
    timeout_s: float = VISIBLE_TIMEOUT_S,
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> LiveOutcome:
    """The shopping session for ``person.sent_to`` through the collector, then ``segments`` of
    ``person.read_from`` until ``SEGMENT`` shows; once the job has committed the events, it is
    stopped (after the last observation) before returning."""
    if commands.url is None:
        raise RuntimeError("the live commands are not started")
    events = shopping_session(person.sent_to, clock())
    status, answer = post_events(commands.url, key, events)
    answered = time.monotonic()
    if status != 202 or answer.get("accepted") != len(events):
        raise LiveDemoError(
            f"POST /v1/events for {person.sent_to.profile}: {status} {json.dumps(answer)} "
            f"(expected 202 with all {len(events)} events accepted)"
        )

    def visible() -> bool:
        shown = reader.segments(person.read_from.profile)
        return shown is not None and SEGMENT in shown.segments

    _poll(
        commands,
        visible,
        answered,
        timeout_s,
        lambda: (
            f"segments({person.read_from.profile}) did not show {SEGMENT!r} within "
            f"{timeout_s:.0f} s of the 202 for {person.sent_to.profile} (live job's log: "
            f"{commands.log_dir / 'live-profiles.log'})"
        ),
    )
    seconds = time.monotonic() - answered
    after = reader.profile(person.read_from.profile)
    if after is None:
        raise LiveDemoError(f"the row of {person.read_from.profile} vanished after its read")
    wait_until_committed(commands, len(events), timeout_s, answered)
    summary = commands.stop()
    return LiveOutcome(person, events, status, answer, seconds, person.read_from, after, summary)
