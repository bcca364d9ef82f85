"""Kafka to the lake, exactly once: the events topic into ``landing/date=D/`` as gzip JSON lines.

The lake stays the source of truth: the daily run reads these files as it reads any collector's,
and the landing sensor runs a day when its files change. Each event is written exactly once,
across a ``kill -9`` of the sink at any point and across broker restarts, by a two-step commit
whose state lives in Kafka's committed offsets:

1. A batch of a partition covers the offsets ``[start, end]``, ``start`` being the partition's
   committed offset. Before any file is written, the sink commits ``start`` again with the
   metadata ``lake-sink end=<end>``: the *intent*.
2. It writes one file per UTC day in the batch, named after the partition and the range
   (``part-kafka-<topic>-<partition>-<start>-<end>.jsonl.gz``), each written whole (a rename
   on a local disk, one PUT on S3), skipping files that already exist.
3. It commits ``end + 1`` without metadata.

The file of a (day, partition, range) is a function of the messages at those offsets, which
Kafka never changes, so a batch written twice writes the same files. On assignment, a partition
whose committed metadata holds an intent is read again from ``start`` to exactly ``end`` and
that batch is finished before anything else: files already written are kept, the missing ones
written, then ``end + 1`` committed. Hence: everything below a committed offset is in the lake
once; a crash between 1 and 3 is finished with the same file names; a crash before 1 leaves no
file. A member that lost its partitions to a rebalance cannot commit an intent any more
(Kafka fences its generation), so a new batch is only ever started by the partition's owner.

**Closing a day.** Day D is closed (``_SUCCESS`` written) once the wall clock is past the end of
D plus the lateness allowance and the sink has caught up, for every partition of the topic, with
the end of the log as it was at that moment (the group's committed offsets at or past those
high watermarks). Event time alone would not do: it stalls while no event arrives (a quiet last
day would never close) and jumps with one device's wrong clock; the catch-up condition means
that every event that reached Kafka before the deadline is in the lake before the marker, even
after an outage of the sink. An event for a closed day (a phone that was offline) lands as a
new file of that day and the marker is written again after it: the day's digest changes, and
the landing sensor runs the day again.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from profile_store.event_bus.consumer import MessageBatch, batch_consumer, consume_batch
from profile_store.event_bus.settings import EventBusSettings
from profile_store.lake.landing_watch import is_landing_data
from profile_store.lake.layout import LANDING, SUCCESS_MARKER, landing_day
from profile_store.lake.storage import LakeStorage
from profile_store.realtime.event_days import day_text, event_days, landing_lines
from profile_store.realtime.sink_metrics import ConsumerHealth

logger = logging.getLogger(__name__)

DEFAULT_GROUP_ID = "profiles-lake-sink"
DEFAULT_LATENESS = timedelta(hours=1)
DEFAULT_FLUSH_SECONDS = 300.0
DEFAULT_FLUSH_BYTES = 256 * 1024 * 1024
GZIP_LEVEL = 6
_INTENT = re.compile(r"^lake-sink end=(\d+)$")
_SECONDS_PER_DAY = 86_400
# Commit errors that mean the partitions are no longer this member's: the batch is dropped and
# the new owner finishes it from the intent.
_NOT_OURS = frozenset(
    {
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.FENCED_INSTANCE_ID,
        KafkaError._ASSIGNMENT_LOST,
        KafkaError.STALE_MEMBER_EPOCH,
    }
)


def sink_file_name(topic: str, partition: int, start: int, end: int) -> str:
    """The landing file of one partition's batch ``[start, end]`` in one day."""
    return f"part-kafka-{topic}-{partition:04d}-{start:020d}-{end:020d}.jsonl.gz"


def sink_file_pattern(topic: str) -> re.Pattern[str]:
    return re.compile(
        r"^part-kafka-" + re.escape(topic) + r"-(\d{4})-(\d{20})-(\d{20})\.jsonl\.gz$"
    )


def intent_metadata(end: int) -> str:
    return f"lake-sink end={end}"


def intent_end(metadata: str | None) -> int | None:
    """The ``end`` of the intent recorded in a committed offset's metadata, if any."""
    match = _INTENT.match(metadata or "")
    return int(match.group(1)) if match else None


class SinkError(RuntimeError):
    """The sink cannot go on; what it wrote is safe, a restart resumes from Kafka's offsets."""


@dataclass(frozen=True)
class LakeSinkConfig:
    group_id: str = DEFAULT_GROUP_ID
    lateness: timedelta = DEFAULT_LATENESS
    flush_seconds: float = DEFAULT_FLUSH_SECONDS  # a batch is written at the latest this old
    flush_bytes: int = DEFAULT_FLUSH_BYTES  # ... or once this many message bytes are buffered
    max_poll_messages: int = 10_000
    close_check_seconds: float = 5.0
    commit_timeout_seconds: float = 300.0  # Kafka unreachable this long: the sink stops
    # A crashed sink's partitions go to another member (or its restart) after this long.
    session_timeout_seconds: float = 10.0

    def __post_init__(self) -> None:
        for name in (
            "flush_seconds",
            "flush_bytes",
            "max_poll_messages",
            "close_check_seconds",
            "commit_timeout_seconds",
            "session_timeout_seconds",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be positive, got {getattr(self, name)}")
        if self.lateness < timedelta(0):
            raise ValueError(f"lateness: must not be negative, got {self.lateness}")


class _DayFile:
    """One day's lines of one partition batch, compressed as they arrive."""

    def __init__(self) -> None:
        # wbits 31: a gzip member (header without name or time), what ingest reads.
        self._deflate = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 31)
        self._parts: list[bytes] = []
        self.lines = 0

    def add(self, data: memoryview, lines: int) -> None:
        self._parts.append(self._deflate.compress(data))
        self.lines += lines

    def finish(self) -> bytes:
        self._parts.append(self._deflate.flush())
        return b"".join(self._parts)


@dataclass
class _PartitionBatch:
    """What the sink holds of one partition: the batch being filled and its bounds."""

    start: int | None  # the committed offset; None until the first message (no commit yet)
    known: bool = True  # False: the committed offset is still to be looked up
    must_end: int | None = None  # an unfinished intent: this batch ends exactly there
    end: int | None = None
    opened_at: float | None = None
    message_bytes: int = 0
    days: dict[int, _DayFile] = field(default_factory=dict)

    def bounds(self) -> tuple[int, int]:
        """``(start, end)`` of a batch that holds messages."""
        if self.start is None or self.end is None:
            raise RuntimeError("an empty batch has no bounds")
        return self.start, self.end

    @property
    def empty(self) -> bool:
        return self.end is None


@dataclass
class SinkProgress:
    """What the sink did so far (for logs, tests and the benchmark)."""

    messages: int = 0
    files_written: int = 0
    files_kept: int = 0  # an unfinished batch's files found already written
    batches: int = 0
    recovered_batches: int = 0
    days_closed: list[str] = field(default_factory=list)


def day_end_seconds(day: int) -> float:
    """The end of a day number (exclusive), in seconds since the epoch."""
    return float((day + 1) * _SECONDS_PER_DAY)


class LakeSink:
    """Consumes the events topic into the lake's landing area; see the module docstring."""

    def __init__(
        self,
        settings: EventBusSettings,
        storage: LakeStorage,
        config: LakeSinkConfig | None = None,
        *,
        clock: Callable[[], float] = time.time,
        on_written: Callable[[int, float], None] | None = None,
        health: ConsumerHealth | None = None,
    ) -> None:
        """``on_written(messages, seconds)`` is told of each batch in the lake and committed
        (metrics); ``health`` of each assignment (readiness)."""
        self.settings = settings
        self.on_written = on_written
        self.health = health
        self.storage = storage
        self.config = config or LakeSinkConfig()
        self.clock = clock
        self.progress = SinkProgress()
        self._topic = settings.topic
        self._batches: dict[int, _PartitionBatch] = {}
        self._open_days: set[int] = set()
        self._day_snapshots: dict[int, dict[int, int]] = {}
        self._last_close_check = float("-inf")
        self._flush_soon = False
        self._consumer: Consumer | None = None
        # Looks up the group's committed offsets and the log ends without being a member:
        # the member's own client cannot answer while its group is rebalancing.
        self._observer: Consumer | None = None
        self._closing = False
        self._file_pattern = sink_file_pattern(self._topic)

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> LakeSink:
        """Find days left open by an earlier run, then join the consumer group."""
        self._open_days |= self._days_left_open()
        self._closing = False
        self._observer = Consumer(
            self.settings.client_config(
                **{"group.id": self.config.group_id, "enable.auto.commit": False}
            )
        )
        self._consumer = batch_consumer(
            self.settings,
            self.config.group_id,
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            properties={"session.timeout.ms": int(self.config.session_timeout_seconds * 1000)},
        )
        return self

    def run(
        self,
        stop: threading.Event,
        poll_timeout: float = 0.5,
        after_step: Callable[[], None] | None = None,
    ) -> None:
        """Until ``stop`` is set; then what is buffered is written and committed.
        ``after_step`` runs after each step (metrics)."""
        while not stop.is_set():
            self.step(poll_timeout)
            if after_step is not None:
                after_step()
        self.close()

    def close(self) -> None:
        """Write and commit what is buffered, close days that are due, leave the group."""
        if self._consumer is None:
            return
        try:
            self.flush()
            self.close_due_days(force_check=True)
        finally:
            self._closing = True  # partitions assigned while leaving are not looked up
            self._consumer.close()
            self._consumer = None
            if self._observer is not None:
                self._observer.close()
                self._observer = None

    # -- the loop --------------------------------------------------------------------------------

    def step(self, poll_timeout: float = 0.5) -> int:
        """Consume one poll's messages, write batches that are due, close days that are due.
        Returns how many messages the poll brought."""
        consumer = self._require_consumer()
        self._look_up_unknown()
        batch = consume_batch(consumer, self.config.max_poll_messages, poll_timeout)
        if len(batch):
            self._add(batch)
        if self._flush_due():
            self.flush()
        self.close_due_days()
        return len(batch)

    def flush(self, partitions: Iterable[int] | None = None) -> None:
        """Write the buffered batches (all, or of ``partitions``) and commit them."""
        chosen = sorted(self._batches if partitions is None else partitions)
        ready = {p: self._batches[p] for p in chosen if p in self._batches}
        # An unfinished intent's batch is written only whole, under the intent's range.
        ready = {
            p: b
            for p, b in ready.items()
            if not b.empty and (b.must_end is None or b.end == b.must_end)
        }
        self._flush_soon = False
        if not ready:
            return
        started = time.monotonic()
        # 1. the intents (an unfinished batch found at assignment already has its own)
        intents = [
            TopicPartition(self._topic, p, b.bounds()[0], metadata=intent_metadata(b.bounds()[1]))
            for p, b in ready.items()
            if b.must_end is None
        ]
        lost = self._commit(intents) if intents else set()
        for partition in lost:
            self._drop(partition)
            ready.pop(partition)
        if not ready:  # every partition went to the group's next generation
            return
        # 2. the files
        touched: set[int] = set()
        written_before = self.progress.files_written
        for partition, batch in ready.items():
            name = sink_file_name(self._topic, partition, *batch.bounds())
            for day, day_file in sorted(batch.days.items()):
                path = f"{landing_day(day_text(day))}/{name}"
                data = day_file.finish()
                if self.storage.exists(path):
                    self.progress.files_kept += 1
                else:
                    self.storage.write_bytes(path, data)
                    self.progress.files_written += 1
                touched.add(day)
        for day in sorted(touched):
            self._after_writing(day)
        # 3. the batches are in the lake
        done = [TopicPartition(self._topic, p, b.bounds()[1] + 1) for p, b in ready.items()]
        self._commit(done)
        if self.on_written is not None:
            messages = sum(f.lines for b in ready.values() for f in b.days.values())
            self.on_written(messages, time.monotonic() - started)
        for partition, batch in ready.items():
            if batch.must_end is not None:
                self.progress.recovered_batches += 1
            self.progress.batches += 1
            self._batches[partition] = _PartitionBatch(start=batch.bounds()[1] + 1)
        logger.info(
            "lake sink: %d files for %s from partitions %s",
            self.progress.files_written - written_before,
            ", ".join(day_text(day) for day in sorted(touched)),
            ", ".join(f"{p} [{b.start}, {b.end}]" for p, b in ready.items()),
        )

    def close_due_days(self, force_check: bool = False) -> list[str]:
        """Write ``_SUCCESS`` for each open day past its lateness once the sink caught up."""
        checked = time.monotonic()
        if not force_check and checked - self._last_close_check < self.config.close_check_seconds:
            return []
        self._last_close_check = checked
        now = self.clock()
        lateness = self.config.lateness.total_seconds()
        due = [day for day in sorted(self._open_days) if now >= day_end_seconds(day) + lateness]
        if not due:
            return []
        closed = []
        try:
            for day in due:
                if day not in self._day_snapshots:
                    # The end of the log as of now, a moment past the day's deadline.
                    self._day_snapshots[day] = self._high_watermarks()
            committed = self._committed_positions()
        except KafkaException as error:  # e.g. the broker restarting: the next check retries
            logger.warning("lake sink: cannot check the days due yet (%s)", error.args[0].str())
            return []
        for day in due:
            snapshot = self._day_snapshots[day]
            if all(committed.get(p, 0) >= high for p, high in snapshot.items()):
                self._write_marker(day)
                self._open_days.discard(day)
                del self._day_snapshots[day]
                closed.append(day_text(day))
                logger.info("lake sink: day %s closed (_SUCCESS written)", day_text(day))
            else:
                self._flush_soon = True  # the sink holds what the day waits for
        self.progress.days_closed.extend(closed)
        return closed

    def lag(self) -> int:
        """Messages in the topic not yet committed to the lake (by the whole group)."""
        committed = self._committed_positions()
        return sum(max(0, high - committed[p]) for p, high in self._high_watermarks().items())

    @property
    def open_days(self) -> list[str]:
        return [day_text(day) for day in sorted(self._open_days)]

    # -- internals: buffering --------------------------------------------------------------------

    def _add(self, batch: MessageBatch) -> None:
        """Buffer a poll's messages by partition and day; an unfinished intent's batch is
        written as soon as it is complete, before the messages that follow it."""
        for value in np.unique(batch.partitions):
            partition = int(value)
            state = self._batches.get(partition)
            if state is None or not state.known:  # revoked meanwhile, or not looked up yet
                continue
            rows = batch.take(batch.partitions == value)
            if state.must_end is not None:
                inside = rows.offsets <= state.must_end
                self._buffer(partition, rows.take(inside))
                if rows.offsets[-1] < state.must_end:
                    continue
                state.end = state.must_end  # the intent's range, even if its last offsets
                self.flush([partition])  # are gone from the log (transaction markers)
                rows = rows.take(~inside)
            self._buffer(partition, rows)

    def _buffer(self, partition: int, rows: MessageBatch) -> None:
        if not len(rows):
            return
        state = self._batches[partition]
        if state.start is None:
            state.start = int(rows.offsets[0])
        if state.opened_at is None:
            state.opened_at = time.monotonic()
        days = event_days(rows.values, rows.timestamps_ms)
        lines = pc.binary_join_element_wise(landing_lines(rows.values), b"\n", b"")
        order = np.lexsort((rows.offsets, days))  # by day, offset order within a day
        ordered = lines.take(pa.array(order))
        offsets = np.frombuffer(ordered.buffers()[1], dtype=np.int32)[
            ordered.offset : ordered.offset + len(ordered) + 1
        ]
        data = memoryview(ordered.buffers()[2])
        sorted_days = days[order]
        bounds = np.flatnonzero(np.diff(sorted_days)) + 1
        for first, last in zip(
            np.concatenate([[0], bounds]), np.concatenate([bounds, [len(order)]]), strict=True
        ):
            day = int(sorted_days[first])
            day_file = state.days.setdefault(day, _DayFile())
            day_file.add(data[offsets[first] : offsets[last]], int(last - first))
        state.end = int(rows.offsets[-1])
        state.message_bytes += rows.value_bytes
        self.progress.messages += len(rows)

    def _flush_due(self) -> bool:
        if self._flush_soon:
            return True
        # An unfinished intent's batch is written when it is whole, not by age or size.
        held = [b for b in self._batches.values() if not b.empty and b.must_end is None]
        if not held:
            return False
        if sum(b.message_bytes for b in held) >= self.config.flush_bytes:
            return True
        oldest = min(b.opened_at for b in held if b.opened_at is not None)
        return time.monotonic() - oldest >= self.config.flush_seconds

    # -- internals: Kafka ------------------------------------------------------------------------

    def _require_consumer(self) -> Consumer:
        if self._consumer is None:
            raise RuntimeError("the lake sink is not started")
        return self._consumer

    def _require_observer(self) -> Consumer:
        if self._observer is None:
            raise RuntimeError("the lake sink is not started")
        return self._observer

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        """Each assigned partition starts at its committed offset, finishing its intent first.

        A callback must not raise (it runs inside ``consume``): if the offsets cannot be read
        now, the partitions' messages are set aside until they can (``_look_up_unknown``)."""
        if self._closing:
            return
        if self.health is not None:
            self.health.assigned()
        for partition in partitions:
            self._batches[partition.partition] = _PartitionBatch(start=None, known=False)
        self._look_up_unknown(seek=False)

    def _look_up_unknown(self, seek: bool = True) -> None:
        unknown = [p for p, b in self._batches.items() if not b.known]
        if not unknown:
            return
        try:
            committed = self._require_observer().committed(
                [TopicPartition(self._topic, p) for p in unknown], timeout=10
            )
        except KafkaException as error:
            logger.warning("lake sink: committed offsets unreadable (%s)", error.args[0].str())
            return
        for found in committed:
            if found.error is not None or found.partition not in self._batches:
                continue
            start = found.offset if found.offset >= 0 else None
            must_end = intent_end(found.metadata) if start is not None else None
            if seek:  # messages fetched meanwhile were set aside: read them again
                try:
                    self._require_consumer().seek(
                        TopicPartition(
                            self._topic,
                            found.partition,
                            start if start is not None else OFFSET_BEGINNING,
                        )
                    )
                except KafkaException:  # not fetching yet: the next step tries again
                    continue
            self._batches[found.partition] = _PartitionBatch(start=start, must_end=must_end)
            if must_end is not None:
                logger.info(
                    "lake sink: partition %d has an unfinished batch [%d, %d]; finishing it",
                    found.partition,
                    start,
                    must_end,
                )

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for partition in partitions:
            self._drop(partition.partition)

    def _drop(self, partition: int) -> None:
        """Forget a partition's buffered batch: nothing of it was committed past its intent."""
        self._batches.pop(partition, None)

    def _commit(self, offsets: list[TopicPartition]) -> set[int]:
        """Commit synchronously, retrying what Kafka may accept later; the partitions that are
        no longer this member's."""
        if not offsets:
            return set()
        consumer = self._require_consumer()
        delay = 0.2
        deadline = time.monotonic() + self.config.commit_timeout_seconds
        while True:
            try:
                results = consumer.commit(offsets=offsets, asynchronous=False) or []
                failed = [tp for tp in results if tp.error is not None]
            except KafkaException as error:
                code = error.args[0].code()
                if code in _NOT_OURS:
                    return {tp.partition for tp in offsets}
                if not error.args[0].retriable() and code not in _RETRIED:
                    raise
                logger.warning("lake sink: commit failed (%s); retrying", error.args[0].str())
                failed = offsets
            else:
                lost = {
                    tp.partition
                    for tp in failed
                    if tp.error is not None and tp.error.code() in _NOT_OURS
                }
                failed = [tp for tp in failed if tp.partition not in lost]
                if not failed:
                    return lost
                offsets = [tp for tp in offsets if tp.partition in {f.partition for f in failed}]
            if time.monotonic() > deadline:
                raise SinkError(
                    f"could not commit offsets of {self._topic!r} for "
                    f"{self.config.commit_timeout_seconds:.0f} s; stopping (a restart finishes "
                    "the batch in progress)"
                )
            time.sleep(delay)
            delay = min(delay * 2, 5.0)

    def _all_partitions(self) -> list[TopicPartition]:
        metadata = self._require_observer().list_topics(self._topic, timeout=30).topics[self._topic]
        return [TopicPartition(self._topic, p) for p in sorted(metadata.partitions)]

    def _high_watermarks(self) -> dict[int, int]:
        observer = self._require_observer()
        return {
            tp.partition: observer.get_watermark_offsets(tp, timeout=30)[1]
            for tp in self._all_partitions()
        }

    def _committed_positions(self) -> dict[int, int]:
        """The group's committed offset per partition; a partition never committed counts from
        its first offset still in the log."""
        observer = self._require_observer()
        positions = {}
        for tp in observer.committed(self._all_partitions(), timeout=30):
            if tp.offset == OFFSET_INVALID or tp.offset < 0:
                positions[tp.partition] = observer.get_watermark_offsets(tp, timeout=30)[0]
            else:
                positions[tp.partition] = tp.offset
        return positions

    # -- internals: the lake ---------------------------------------------------------------------

    def _marker(self, day: int) -> str:
        return f"{landing_day(day_text(day))}/{SUCCESS_MARKER}"

    def _after_writing(self, day: int) -> None:
        """A closed day that received a file is marked again after it (its digest changed);
        an open one waits for its deadline."""
        if self.storage.exists(self._marker(day)):
            self._write_marker(day)
            logger.info("lake sink: late events for closed day %s; marked again", day_text(day))
        else:
            self._open_days.add(day)

    def _write_marker(self, day: int) -> None:
        self.storage.write_bytes(self._marker(day), b"")

    def _days_left_open(self) -> set[int]:
        """Days holding this sink's files with no marker, or a marker older than a file."""
        newest_file: dict[str, int] = {}
        marked: dict[str, int] = {}
        for file in self.storage.list_files(LANDING):
            parts = file.path.split("/")
            if len(parts) != 3 or not parts[1].startswith("date="):
                continue
            day, name = parts[1][len("date=") :], parts[2]
            if name == SUCCESS_MARKER:
                marked[day] = file.modified_ms
            elif is_landing_data(name) and self._file_pattern.match(name):
                newest_file[day] = max(newest_file.get(day, 0), file.modified_ms)
        return {
            _day_number(day) for day, newest in newest_file.items() if marked.get(day, -1) < newest
        }


_RETRIED = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._WAIT_COORD,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
    }
)


def _day_number(day: str) -> int:
    return int(np.datetime64(day, "D").astype(np.int64))
