"""Kafka to the profiles, live: each event in its person's profile rows within seconds.

A long-running consumer of the events topic in its own group (``profiles-live-profiles``).
Per batch:

1. The batch's events that ingest will accept (``live_events``), grouped by lineage (origin id,
   UTC day, partition: ``live_cells``).
2. One multi-get of the origins' rows (``s:master``, ``s:as_of``, their ``a:`` list of the
   person's other ids and their live cells); one of the persons' other rows, plus the lookup
   rows of the alternate ids of origins never seen (``l|<type>|<id>``: their person's master);
   and only when such a lookup names a person, one of those masters' rows. An origin without a
   row and without a lookup is a person of its own until the daily identity run links it.
3. Each lineage's events past the offset its cell holds are folded in (``live_updates``); every
   lineage cell found on any row of the person (the newest version of each) is written to each
   row of the person lacking it, except on a row whose daily state already covers its day.
4. One batch of puts per partition (each partition's cells carry its own version as their HBase
   timestamp), then the batch's offsets are committed.

**Exactly once in the counters.** A lineage's events all come from one partition, in offset
order, and its cell records the highest offset it holds: re-reading any range (a crash between
the puts and the commit, a ``kill -9`` half-way through the puts, a rebalance, a broker restart)
applies only the events past it. The origin's own row is written with every change of its
lineages, and the committed offset only moves past a batch once all its puts are acknowledged,
so a batch read again always finds a base at least as far as the committed offset. Cells are
written with their version as HBase timestamp (the batch's last offset in the partition, plus
one), so of two writes of a lineage the one from the later batch wins in whatever order they
land: a member that lost its partitions and writes late cannot take a cell back.

**The rules in force.** The job reads the lake's segment rules again every
``rules_refresh_seconds`` between batches: a change made with ``profiles segment-rules set``
applies from the next batch on, without a restart. A rules file it cannot read or that is not
valid leaves the rules it has in force, with a warning.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import socket
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from confluent_kafka import Consumer, KafkaException, TopicPartition
from thriftpy2.thrift import TException

from profile_store.event_bus.consumer import MessageBatch, batch_consumer, consume_batch
from profile_store.event_bus.settings import EventBusSettings
from profile_store.hbase.encoded_puts import RowPuts, mutate_rows_ts
from profile_store.hbase_gateway.store import DEFERRED_BATCH_MUTATIONS
from profile_store.profiles.live_cells import (
    Lineage,
    LiveCell,
    LiveCellError,
    decode_cell,
    encode_cell,
    parse_qualifier,
    person_identity,
    superseded,
)
from profile_store.profiles.reads import LOOKUP_KEY_TYPES, OpenTable
from profile_store.profiles.rules_in_force import RulesInForce
from profile_store.profiles.segment_rules import (
    DAY_MS,
    DEFAULT_RULES,
    SegmentRule,
    SegmentRuleError,
    parse_rules,
    rules_digest,
)
from profile_store.profiles.table import (
    AS_OF,
    ASSOCIATIONS,
    DEVICES,
    LOOKUP_PROFILE,
    MASTER,
    PROFILE_TABLE,
    TYPE,
    TYPE_LOOKUP,
    TYPE_PROFILE,
    UNSYNCED,
    decode_ms,
    is_live_qualifier,
    lookup_key,
    profile_key,
)
from profile_store.realtime.live_events import LiveEvents, parse_events
from profile_store.realtime.live_updates import event_lineages, lineage_updates
from profile_store.realtime.sink_metrics import ConsumerHealth
from profile_store.suppression.salted_digests import Suppression

logger = logging.getLogger(__name__)

DEFAULT_GROUP_ID = "profiles-live-profiles"
ORIGIN_COLUMNS = [TYPE, MASTER, AS_OF, DEVICES, ASSOCIATIONS, UNSYNCED]
SECOND_COLUMNS = [TYPE, AS_OF, UNSYNCED, LOOKUP_PROFILE]  # the persons' other rows and lookups
HBASE_ERRORS = (TException, OSError, socket.timeout)


class LiveJobError(RuntimeError):
    """The job cannot go on (HBase unreachable past the retry bound); a restart resumes from
    the committed offsets and applies nothing twice."""


@dataclass(frozen=True)
class LiveProfilesConfig:
    group_id: str = DEFAULT_GROUP_ID
    rules: tuple[SegmentRule, ...] = parse_rules(DEFAULT_RULES)
    half_life_days: float = 7.0  # must be compacted_profiles' half_life_days
    key_types: tuple[str, ...] = LOOKUP_KEY_TYPES
    table_name: str = PROFILE_TABLE
    max_poll_messages: int = 5000
    poll_timeout_seconds: float = 0.2
    suppression_refresh_seconds: float = 60.0
    rules_refresh_seconds: float = 60.0
    hbase_retry_seconds: float = 120.0  # HBase failing this long: the job stops
    session_timeout_seconds: float = 10.0
    chunk_rows: int = 1000  # rows per multi-get
    # Cells per put call: under the embedded gateway's deferral threshold, so each call is
    # written at once. The job reads its rows back at its next batch, and a deferred call
    # costs the gateway its pending log on top of the same writes.
    put_cells: int = DEFERRED_BATCH_MUTATIONS - 1

    def __post_init__(self) -> None:
        for name in (
            "half_life_days",
            "max_poll_messages",
            "poll_timeout_seconds",
            "suppression_refresh_seconds",
            "rules_refresh_seconds",
            "hbase_retry_seconds",
            "session_timeout_seconds",
            "chunk_rows",
            "put_cells",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)}")
        if not self.group_id.strip():
            raise ValueError("group_id: must not be empty")

    @property
    def half_life_ms(self) -> int:
        return int(round(self.half_life_days * DAY_MS))

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(sorted({name for rule in self.rules for name in rule.attributes}))


@dataclass
class LiveProgress:
    """What the job did so far (logs, tests, the benchmark)."""

    messages: int = 0
    batches: int = 0
    events_applied: int = 0
    events_already_held: int = 0  # read again after a restart: their cells held them
    events_superseded: int = 0  # of a day the person's daily state already counts
    rejected: Counter = field(default_factory=Counter)
    suppressed: int = 0
    rows_written: int = 0
    cells_written: int = 0
    new_profiles: int = 0  # origins with no row and no lookup: a row of their own
    resolved_by_lookup: int = 0
    spreads: int = 0  # persons whose rows were all read, to spread their cells over them
    hbase_retries: int = 0

    def summary(self) -> str:
        rejected = sum(self.rejected.values())
        return (
            f"{self.messages:,} messages in {self.batches:,} batches: {self.events_applied:,} "
            f"events applied, {self.events_already_held:,} already held, "
            f"{self.events_superseded:,} of days the daily run covers, {rejected:,} rejected "
            f"({', '.join(f'{k} {v:,}' for k, v in sorted(self.rejected.items())) or 'none'}), "
            f"{self.suppressed:,} of erased ids; {self.rows_written:,} row writes, "
            f"{self.cells_written:,} cells; {self.new_profiles:,} new ids, "
            f"{self.resolved_by_lookup:,} found by lookup, {self.spreads:,} persons spread; "
            f"{self.hbase_retries} HBase retries"
        )


@dataclass
class _Row:
    """What a multi-get found of a ``p|`` row."""

    exists: bool
    as_of_ms: int = 0
    devices: int = 1
    master: str | None = None
    others: tuple[str, ...] = ()
    raw: dict[Lineage, bytes] = field(default_factory=dict)  # its live cells, as stored


@dataclass
class _Person:
    """The rows a batch writes for one person, and how much of them it read."""

    members: set[str] = field(default_factory=set)
    as_of_ms: int = 0  # the daily state of its rows (s:as_of)
    identity: str = ""  # ``person_identity`` of its rows
    # Its other rows were read: the first write since the person's rows were compacted (or
    # since its id got its first live cell), which spreads every cell of the person.
    spread: bool = False
    # Found through a lookup row: its master's ids are written without being read.
    by_lookup: bool = False


class LiveProfiles:
    """The live profile job; see the module docstring."""

    def __init__(
        self,
        settings: EventBusSettings,
        open_table: OpenTable,
        config: LiveProfilesConfig | None = None,
        *,
        suppression: Callable[[], Suppression] | None = None,
        rules_in_force: Callable[[], RulesInForce] | None = None,
        on_rules: Callable[[RulesInForce], None] | None = None,
        on_written: Callable[[int, float], None] | None = None,
        health: ConsumerHealth | None = None,
    ) -> None:
        """``rules_in_force()`` reads the lake's segment rules again (None: the config's rules
        for good), and ``on_rules`` is told of each change it finds; ``on_written(messages,
        seconds)`` is told of each batch applied and committed, with the time from its parse to
        its commit (metrics); ``health`` of each assignment and of HBase answering or failing
        (readiness)."""
        self.settings = settings
        self.on_written = on_written
        self.health = health
        self.open_table = open_table
        self.config = config or LiveProfilesConfig()
        self.progress = LiveProgress()
        self._load_suppression = suppression
        self._suppression: Suppression | None = None
        self._suppression_loaded = float("-inf")
        self._read_rules = rules_in_force
        self._on_rules = on_rules
        self._rules_read = time.monotonic()  # the config's rules: read just before the start
        self._consumer: Consumer | None = None

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> LiveProfiles:
        self._refresh_suppression(force=True)
        self._consumer = batch_consumer(
            self.settings,
            self.config.group_id,
            on_assign=None if self.health is None else self.health.assigned,
            properties={"session.timeout.ms": int(self.config.session_timeout_seconds * 1000)},
        )
        return self

    def run(
        self,
        stop: threading.Event,
        log_seconds: float = 30.0,
        after_step: Callable[[], None] | None = None,
    ) -> None:
        """Until ``stop`` is set (the batch in hand is finished first); progress is logged
        every ``log_seconds``, ``after_step`` runs after each step (metrics)."""
        logged = time.monotonic()
        while not stop.is_set():
            self.step()
            if after_step is not None:
                after_step()
            if time.monotonic() - logged >= log_seconds:
                logged = time.monotonic()
                logger.info("live profiles: %s", self.progress.summary())
        self.close()

    def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close()  # commits nothing: every applied batch was committed

    def step(self, poll_timeout: float | None = None) -> int:
        """Read one batch, apply it to HBase, commit its offsets; the number of messages."""
        if self._consumer is None:
            raise RuntimeError("the live profile job is not started")
        timeout = self.config.poll_timeout_seconds if poll_timeout is None else poll_timeout
        self._refresh_rules()
        batch = consume_batch(self._consumer, self.config.max_poll_messages, timeout)
        if not len(batch):
            return 0
        started = time.monotonic()
        self._refresh_suppression()
        self._apply_with_retries(batch)
        self._commit(batch)
        if self.on_written is not None:
            self.on_written(len(batch), time.monotonic() - started)
        return len(batch)

    # -- one batch -------------------------------------------------------------------------------

    def apply(self, batch: MessageBatch) -> None:
        """Apply a batch to the profiles table (no commit); safe to repeat."""
        with _cyclic_gc_paused():
            self._apply(batch)

    def _apply(self, batch: MessageBatch) -> None:
        config = self.config
        events, report = parse_events(
            batch,
            attribute_names=config.attribute_names,
            key_types=config.key_types,
            suppression=self._suppression,
        )
        self.progress.messages += len(batch)
        self.progress.batches += 1
        self.progress.rejected.update(report.rejected)
        self.progress.suppressed += report.suppressed
        if not len(events):
            return
        versions = _partition_versions(batch)
        lineages, _group = event_lineages(events)
        touched = set(lineages)
        with self.open_table() as table:
            rows, persons, person_of, decoded = self._resolve(table, events)
            unions = {
                key: _union(
                    person,
                    rows,
                    decoded,
                    None if person.spread or person.by_lookup else touched,
                )
                for key, person in persons.items()
            }
            bases = {
                lineage: cell
                for key, union in unions.items()
                for lineage, (cell, _value) in union.items()
                if person_of.get(lineage.origin) == key
            }
            updates = lineage_updates(events, bases, config.rules, config.half_life_ms, versions)
            self._count(events, bases, rows)
            changed: dict[str, dict[Lineage, tuple[LiveCell, bytes]]] = defaultdict(dict)
            for lineage, cell in updates.items():
                key = person_of[lineage.origin]
                spread = replace(cell, spread_over=persons[key].identity)
                changed[key][lineage] = unions[key][lineage] = (spread, encode_cell(spread))
            puts = _puts(persons, rows, unions, changed, decoded)
            self._write(table, puts)

    def _resolve(
        self, table, events: LiveEvents
    ) -> tuple[dict[str, _Row], dict[str, _Person], dict[str, str], _Decoded]:
        """Each origin's person (keyed by its master) and the rows read: up to three
        multi-gets. The first reads the origins' rows. The second reads the other rows of the
        persons to spread (``_Person.spread``) and the lookup rows of the alternate ids of
        origins without a row; the third, only when such a lookup names a person, its master's
        row."""
        origins = sorted(set(events.origins))
        decoded = _Decoded()
        rows = self._profile_rows(table, origins, ORIGIN_COLUMNS, decoded)
        persons: dict[str, _Person] = defaultdict(_Person)
        person_of: dict[str, str] = {}
        unseen = [o for o in origins if not rows[o].exists]
        for origin in origins:
            row = rows[origin]
            if row.exists:
                master = row.master or origin
                person = persons[master]
                person.members |= {origin, *row.others}
                person.as_of_ms = max(person.as_of_ms, row.as_of_ms)
                identity = person_identity(row.as_of_ms, master, row.devices)
                person.spread |= bool(person.identity) and identity != person.identity
                person.identity = identity
                person_of[origin] = master
        for origin, key in person_of.items():
            person = persons[key]
            if not _spread_over(rows[origin], person):
                person.spread = True
        wanted: dict[str, dict[tuple[str, str], None]] = {o: {} for o in unseen}
        if unseen:
            for origin, keys in zip(events.origins, events.keys, strict=True):
                if keys and origin in wanted:
                    wanted[origin].update(dict.fromkeys(keys))
        spread = {m for p in persons.values() if p.spread for m in p.members}
        members = sorted(spread - set(rows))
        lookups = sorted({lookup_key(*k) for keys in wanted.values() for k in keys})
        second = dict(
            self._rows(table, [profile_key(m) for m in members] + lookups, SECOND_COLUMNS)
        )
        rows.update({m: _row(second.get(profile_key(m), {}), decoded) for m in members})
        self.progress.spreads += sum(1 for p in persons.values() if p.spread)
        masters: dict[str, str] = {}
        for origin in unseen:
            for wanted_key in wanted[origin]:
                named = _lookup_master(second.get(lookup_key(*wanted_key)))
                if named is not None:
                    masters[origin] = named
                    break
        anchors = sorted(set(masters.values()) - set(rows))
        rows.update(self._profile_rows(table, anchors, ORIGIN_COLUMNS, decoded))
        for origin in unseen:
            named_master = masters.get(origin)
            anchor = rows.get(named_master) if named_master is not None else None
            if named_master is None or anchor is None or not anchor.exists:
                persons[origin].members.add(origin)
                persons[origin].identity = person_identity(0, origin, 1)
                person_of[origin] = origin
                self.progress.new_profiles += 1
                continue
            person = persons[named_master]
            person.members |= {origin, named_master, *anchor.others}
            person.as_of_ms = max(person.as_of_ms, anchor.as_of_ms)
            person.identity = person.identity or person_identity(
                anchor.as_of_ms, named_master, anchor.devices
            )
            person.by_lookup = True
            person_of[origin] = named_master
            self.progress.resolved_by_lookup += 1
        return rows, dict(persons), person_of, decoded

    def _profile_rows(
        self, table, ids: Sequence[str], columns: list[bytes], decoded: _Decoded
    ) -> dict[str, _Row]:
        found = dict(self._rows(table, [profile_key(i) for i in ids], columns))
        return {i: _row(found.get(profile_key(i), {}), decoded) for i in ids}

    def _rows(self, table, keys: Sequence[bytes], columns: list[bytes]) -> list:
        chunk = self.config.chunk_rows
        found: list = []
        for start in range(0, len(keys), chunk):
            found += table.rows(list(keys[start : start + chunk]), columns=columns)
        return found

    def _count(
        self,
        events: LiveEvents,
        bases: Mapping[Lineage, LiveCell],
        rows: Mapping[str, _Row],
    ) -> None:
        lineages, group = event_lineages(events)
        held = np.array([bases[x].through if x in bases else -1 for x in lineages], dtype=np.int64)
        already = events.offsets <= held[group]
        late = np.array(
            [x.origin in rows and superseded(x.day, rows[x.origin].as_of_ms) for x in lineages],
            dtype=bool,
        )
        self.progress.events_already_held += int(np.count_nonzero(already))
        self.progress.events_superseded += int(np.count_nonzero(late[group] & ~already))
        self.progress.events_applied += int(np.count_nonzero(~already & ~late[group]))

    def _write(self, table, puts: Mapping[int, Mapping[str, dict[bytes, bytes]]]) -> None:
        """``mutateRowsTs`` calls per version (partition) of at most ``put_cells`` cells, each
        cell put with its version as timestamp (a person's cells encoded once for its rows)."""
        for version, by_row in sorted(puts.items()):
            rows = RowPuts()
            for profile, cells in sorted(by_row.items()):
                rows.add(profile_key(profile), cells)
            mutate_rows_ts(
                table.connection.client, table.name, rows, version, self.config.put_cells
            )
            self.progress.rows_written += len(rows)
            self.progress.cells_written += rows.cells

    # -- HBase and Kafka -------------------------------------------------------------------------

    def _apply_with_retries(self, batch: MessageBatch) -> None:
        deadline = time.monotonic() + self.config.hbase_retry_seconds
        delay = 0.2
        while True:
            try:
                self.apply(batch)
                if self.health is not None:
                    self.health.hbase_answered()
                return
            except HBASE_ERRORS as error:
                if self.health is not None:
                    self.health.hbase_failed(error)
                if time.monotonic() > deadline:
                    raise LiveJobError(
                        f"HBase failed for {self.config.hbase_retry_seconds:.0f} s ({error!r}); "
                        "stopping (a restart applies the batch, nothing twice)"
                    ) from error
                self.progress.hbase_retries += 1
                logger.warning("live profiles: HBase failed (%r); applying the batch again", error)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _commit(self, batch: MessageBatch) -> None:
        """Commit past the batch, without waiting: a commit lost (a broker restarting, a
        rebalance) only means the batch is read again, and applies nothing twice."""
        consumer = self._consumer
        assert consumer is not None
        offsets = [
            TopicPartition(self.settings.topic, partition, end)
            for partition, end in sorted(_partition_versions(batch).items())
        ]
        try:
            consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as error:
            logger.warning("live profiles: commit not sent (%s)", error.args[0].str())

    def _refresh_suppression(self, force: bool = False) -> None:
        if self._load_suppression is None:
            return
        now = time.monotonic()
        if not force and now - self._suppression_loaded < self.config.suppression_refresh_seconds:
            return
        try:
            self._suppression = self._load_suppression()
        except OSError as error:
            if force:
                raise
            logger.warning("live profiles: suppression list not re-read (%r); keeping it", error)
        self._suppression_loaded = now

    def _refresh_rules(self) -> None:
        """Between batches, every ``rules_refresh_seconds``: the rules in force, if changed."""
        now = time.monotonic()
        if self._read_rules is None or now - self._rules_read < self.config.rules_refresh_seconds:
            return
        self._rules_read = now
        try:
            in_force = self._read_rules()
        except (OSError, SegmentRuleError) as error:
            logger.warning("live profiles: segment rules not re-read (%s); keeping them", error)
            return
        if in_force.digest == rules_digest(self.config.rules):
            return
        self.config = replace(self.config, rules=in_force.rules)
        logger.info("live profiles: segment rules changed: %s", in_force.describe())
        if self._on_rules is not None:
            self._on_rules(in_force)


@contextlib.contextmanager
def _cyclic_gc_paused() -> Iterator[None]:
    """A batch allocates tens of thousands of small containers (rows, cells, lineages), all
    freed by reference counting when it ends, and Python's cyclic collector, run every few
    hundred of them, kept walking the job's heap for nothing: it runs between batches instead
    (at the first allocation after)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _partition_versions(batch: MessageBatch) -> dict[int, int]:
    """Per partition of the batch, its last offset plus one: the version of the cells the
    batch writes there, and the offset committed after it."""
    versions: dict[int, int] = {}
    for partition in np.unique(batch.partitions).tolist():
        versions[int(partition)] = int(batch.offsets[batch.partitions == partition].max()) + 1
    return versions


class _Decoded:
    """Live cells decoded when needed, once per batch: a person's rows hold the same cells."""

    def __init__(self) -> None:
        self.lineages: dict[bytes, Lineage] = {}
        self.cells: dict[bytes, LiveCell | None] = {}

    def lineage(self, qualifier: bytes) -> Lineage:
        lineage = self.lineages.get(qualifier)
        if lineage is None:
            lineage = self.lineages[qualifier] = parse_qualifier(qualifier)
        return lineage

    def cell(self, value: bytes) -> LiveCell | None:
        """The cell, or None for a value the job does not write (a corrupt cell is treated
        as absent: the lineage's next state replaces it, and the daily run recounts its day
        from the lake)."""
        if value in self.cells:
            return self.cells[value]
        try:
            cell = decode_cell(value)
        except LiveCellError as error:
            logger.warning("live profiles: %s", error)
            cell = None
        self.cells[value] = cell
        return cell


def _row(cells: Mapping[bytes, bytes], decoded: _Decoded) -> _Row:
    if not cells or cells.get(TYPE, TYPE_PROFILE) != TYPE_PROFILE:
        return _Row(exists=False)
    raw: dict[Lineage, bytes] = {}
    others: list[str] = []
    for name, value in cells.items():
        family, _, qualifier = name.partition(b":")
        if family == ASSOCIATIONS:
            others.append(qualifier.decode())
        elif family == UNSYNCED and is_live_qualifier(qualifier):
            try:
                raw[decoded.lineage(qualifier)] = value
            except LiveCellError as error:  # not the job's: never used, never overwritten
                logger.warning("live profiles: %s", error)
    as_of = cells.get(AS_OF)
    return _Row(
        exists=True,
        as_of_ms=decode_ms(as_of) if as_of else 0,
        devices=int(cells.get(DEVICES, b"1")),
        master=cells[MASTER].decode() if MASTER in cells else None,
        others=tuple(others),
        raw=raw,
    )


def _lookup_master(cells: Mapping[bytes, bytes] | None) -> str | None:
    if not cells or cells.get(TYPE) != TYPE_LOOKUP or not cells.get(LOOKUP_PROFILE):
        return None
    return cells[LOOKUP_PROFILE].decode()


def _union(
    person: _Person,
    rows: Mapping[str, _Row],
    decoded: _Decoded,
    only: set[Lineage] | None = None,
) -> dict[Lineage, tuple[LiveCell, bytes]]:
    """The newest version of each lineage of the person's ids (or of ``only`` those) found on
    its rows read, with its stored bytes (a copy to another row puts them as they are)."""
    union: dict[Lineage, tuple[LiveCell, bytes]] = {}
    for member in person.members:
        row = rows.get(member)
        if row is None:
            continue
        for lineage, value in row.raw.items():
            if lineage.origin not in person.members or (only is not None and lineage not in only):
                continue
            cell = decoded.cell(value)
            if cell is None:
                continue
            have = union.get(lineage)
            if have is None or cell.version > have[0].version:
                union[lineage] = (cell, value)
    return union


def _spread_over(row: _Row, person: _Person) -> bool:
    """Whether the person's cells are on all its rows already: the origin's row holds one of
    them spread over the person as its rows name it now (every cell since went to every row).
    Read from the stored JSON without decoding it (its keys are sorted, one spelling)."""
    needle = b'"p":' + json.dumps(person.identity).encode()
    return any(
        needle in value and lineage.origin in person.members for lineage, value in row.raw.items()
    )


def _puts(
    persons: Mapping[str, _Person],
    rows: Mapping[str, _Row],
    unions: Mapping[str, Mapping[Lineage, tuple[LiveCell, bytes]]],
    changed: Mapping[str, Mapping[Lineage, tuple[LiveCell, bytes]]],
    decoded: _Decoded,
) -> dict[int, dict[str, dict[bytes, bytes]]]:
    """version -> row -> cells, never a cell of a day the row's daily state covers.

    A person spread over its rows gets the batch's new cells on each of them. A person to
    spread (its rows were read) gets every cell of any of its rows on each row that lacks it,
    marked as spread against its current daily state. A person found by lookup gets every cell
    read on each of its master's ids, which were not read.
    """
    puts: dict[int, dict[str, dict[bytes, bytes]]] = defaultdict(lambda: defaultdict(dict))
    for key, person in persons.items():
        if person.spread:
            cells = _marked(unions[key], person.identity)
        elif person.by_lookup:
            cells = dict(unions[key])
        else:
            cells = dict(changed.get(key, {}))
        if not cells:
            continue
        for member in person.members:
            row = rows.get(member)
            as_of = row.as_of_ms if row is not None and row.exists else person.as_of_ms
            held = row.raw if row is not None else {}
            for lineage, (cell, value) in cells.items():
                stored = held.get(lineage)
                if superseded(lineage.day, as_of) or stored == value:
                    continue
                held_cell = decoded.cell(stored) if stored is not None else None
                if held_cell is not None and held_cell.version > cell.version:
                    continue
                puts[cell.version][member][lineage.column] = value
    return puts


def _marked(
    union: Mapping[Lineage, tuple[LiveCell, bytes]], identity: str
) -> dict[Lineage, tuple[LiveCell, bytes]]:
    """The person's cells, each marked as spread over ``identity`` (re-encoded if not)."""
    marked = {}
    for lineage, (cell, value) in union.items():
        if cell.spread_over != identity:
            cell = replace(cell, spread_over=identity)
            value = encode_cell(cell)
        marked[lineage] = (cell, value)
    return marked
