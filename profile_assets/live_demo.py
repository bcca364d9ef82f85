"""The demo's real-time act: events sent for one id of a person reach a bidder's read of another
id of the person within seconds, through the commands a user runs.

``profiles stream live-profiles`` and ``profiles serve`` run as child processes on the demo's
HBase and a Kafka broker; a short shopping session of now (view, cart, purchase) for one id of
a person of the last day goes through the collector (``POST /v1/events`` with a tenant's key),
and ``segments`` of another id of the person is read until the purchase's segment shows. The
events are of today (UTC) because the live job applies only the days a person's daily state
does not count yet, and the demo's days end yesterday.
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

from profile_store.event_bus.settings import EventBusSettings
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.lake.layout import IDENTITY_PROFILES, day_dir
from profile_store.lake.storage import LocalLakeStorage
from profile_store.launchers.child_processes import log_tail, stop_process
from profile_store.profiles.reads import ProfileReader, ProfileView, current_ms
from profile_store.profiles.segment_rules import DEFAULT_RULES, parse_rules
from profile_store.realtime.live_profiles import DEFAULT_GROUP_ID

# A purchase puts a person in it from one event (DEFAULT_RULES, which both the daily
# compaction and the live job apply when not configured otherwise).
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


class LiveCommands:
    """``profiles stream live-profiles`` and ``profiles serve`` as child processes on one HBase
    and one Kafka topic, each logging to a file of ``log_dir``; ready once the service listens
    and the job's consumer group holds the topic's partitions."""

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
                ["stream", "live-profiles", "--lake", self._lake, "--group-id", self.group_id],
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
            while self.url is None or not assigned:
                self.check_running()
                if time.monotonic() > deadline:
                    waiting = "the service to listen" if self.url is None else "the job's group"
                    raise LiveDemoError(
                        f"waited {self.start_timeout_s:.0f} s for {waiting}; logs in {self.log_dir}"
                    )
                if self.url is None:
                    self.url = _listening_url(self.log("serve"))
                assigned = assigned or group_is_assigned(admin, self.settings, self.group_id)
                time.sleep(0.1)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> str:
        """SIGTERM both (the job finishes its batch in hand); the job's last summary line.
        Raises ``LiveDemoError`` when the job did not exit 0."""
        codes = {name: stop_process(p, 60.0) for name, p in self._processes.items()}
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

    def __enter__(self) -> LiveCommands:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _listening_url(log: str) -> str | None:
    marker = "Uvicorn running on "
    if marker not in log:
        return None
    return log.split(marker, 1)[1].split()[0]


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
    ``person.read_from`` until ``SEGMENT`` shows; the job is stopped before returning."""
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
    while True:
        shown = reader.segments(person.read_from.profile)
        if shown is not None and SEGMENT in shown.segments:
            seconds = time.monotonic() - answered
            break
        commands.check_running()
        if time.monotonic() - answered > timeout_s:
            raise LiveDemoError(
                f"segments({person.read_from.profile}) did not show {SEGMENT!r} within "
                f"{timeout_s:.0f} s of the 202 for {person.sent_to.profile} (live job's log: "
                f"{commands.log_dir / 'live-profiles.log'})"
            )
        time.sleep(_POLL_S)
    after = reader.profile(person.read_from.profile)
    if after is None:
        raise LiveDemoError(f"the row of {person.read_from.profile} vanished after its read")
    summary = commands.stop()
    return LiveOutcome(person, events, status, answer, seconds, person.read_from, after, summary)
