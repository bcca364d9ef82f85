"""``profiles stream lake-sink`` and ``profiles stream live-profiles``: the events topic into the
lake's landing area, and into the profile rows in HBase, until stopped.

Long-running processes (one or more of each per topic: they share the work through their
Kafka consumer group). SIGTERM or Ctrl-C finishes the batch in hand, then exits 0; after a
crash, the next start resumes from the group's committed offsets and writes nothing twice
(``lake_sink``, ``live_profiles``). Exit 1: Kafka, the lake or HBase failed; 2: a setting is
wrong.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from botocore.exceptions import BotoCoreError, ClientError
from confluent_kafka import KafkaException

from profile_store.cli.argument_types import (
    port_number,
    positive_int,
    positive_number,
    whole_number,
)
from profile_store.cli.conventions import (
    EXIT_FAILURE,
    EXIT_INPUT,
    HBASE_FAILURES,
    InputError,
    add_hbase_options,
    settings_from_args,
    shorten_usage,
)
from profile_store.event_bus.consumer import ConsumeError
from profile_store.event_bus.settings import EventBusSettings, EventBusSettingsError
from profile_store.event_bus.topics import TopicError, ensure_topic
from profile_store.hbase.pool import hbase_pool, table_opener
from profile_store.lake.settings import LakeSettings
from profile_store.profiles.reads import key_types_from_env
from profile_store.profiles.rules_in_force import read_rules_in_force
from profile_store.profiles.segment_rules import SegmentRuleError
from profile_store.profiles.table import ensure_table
from profile_store.realtime.lake_sink import (
    DEFAULT_FLUSH_BYTES,
    DEFAULT_FLUSH_SECONDS,
    DEFAULT_GROUP_ID,
    DEFAULT_LATENESS,
    LakeSink,
    LakeSinkConfig,
    SinkError,
)
from profile_store.realtime.live_profiles import (
    DEFAULT_GROUP_ID as LIVE_GROUP_ID,
)
from profile_store.realtime.live_profiles import (
    LiveJobError,
    LiveProfiles,
    LiveProfilesConfig,
)
from profile_store.realtime.sink_metrics import (
    DEFAULT_LIVENESS_TIMEOUT_S,
    ConsumerHealth,
    ConsumerMetrics,
)
from profile_store.realtime.stream_lag import group_lag
from profile_store.suppression.salted_digests import Suppression

logger = logging.getLogger("profile_store.realtime")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``profiles stream`` and its ``lake-sink`` and ``live-profiles`` commands."""
    parser = subparsers.add_parser(
        "stream",
        help="real-time consumers of the events topic (Kafka)",
        description="Long-running consumers of the events topic. Kafka is found through "
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS and PROFILES_KAFKA_TOPIC (see the README).",
    )
    commands = parser.add_subparsers(dest="stream_command", metavar="COMMAND", required=True)
    sink = commands.add_parser(
        "lake-sink",
        help="write the events topic into landing/date=D/, each event exactly once",
        description="Consume the events topic into the lake's landing area as gzip JSON lines, "
        "each event exactly once in the UTC day of its event_time, and write a day's _SUCCESS "
        "once the lateness allowance after the day passed and the topic was read to where it "
        "ended then.",
    )
    sink.add_argument(
        "--lake",
        help="lake root, a directory or s3://bucket/prefix "
        "(default: PROFILES_LAKE_ROOT, else data/lake)",
    )
    sink.add_argument(
        "--group-id",
        default=DEFAULT_GROUP_ID,
        help="Kafka consumer group; its committed offsets are the sink's progress "
        "(default %(default)s)",
    )
    sink.add_argument(
        "--lateness-seconds",
        type=whole_number,
        default=int(DEFAULT_LATENESS.total_seconds()),
        help="a day is closed this long after it ends (UTC, wall clock) (default %(default)s)",
    )
    sink.add_argument(
        "--flush-seconds",
        type=positive_number,
        default=DEFAULT_FLUSH_SECONDS,
        help="write a batch at the latest this long after its first event (default "
        "%(default)s): fewer, larger landing files the longer",
    )
    sink.add_argument(
        "--flush-mb",
        type=positive_number,
        default=DEFAULT_FLUSH_BYTES / 2**20,
        help="... or once this many MiB of events are held (default %(default)s)",
    )
    add_metrics_options(sink, "lag, events written, write time")
    sink.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    sink.set_defaults(func=run_lake_sink)
    add_live_parser(commands)
    return parser


def add_live_parser(commands: Any) -> argparse.ArgumentParser:
    live = commands.add_parser(
        "live-profiles",
        help="apply each event to its person's profile rows in HBase within seconds",
        description="Consume the events topic into the profiles table: each event's id is "
        "resolved to its person (its row's master and linked ids, or a lookup row of its "
        "alternate id), the segment rules and decaying counters are applied, and every row of "
        "the person gets the result, exactly once per event, until the daily run of the "
        "event's day takes over. The segment rules are the lake's, as the daily run's, read "
        "at the start and again every --rules-refresh-seconds (profiles segment-rules show); "
        "the half-life must be compacted_profiles'.",
    )
    live.add_argument(
        "--lake",
        help="lake root holding the segment rules in force and the erasure suppression list, a "
        "directory or s3://bucket/prefix (default: PROFILES_LAKE_ROOT, else data/lake)",
    )
    live.add_argument(
        "--group-id",
        default=LIVE_GROUP_ID,
        help="Kafka consumer group; its committed offsets are the job's progress "
        "(default %(default)s)",
    )
    live.add_argument(
        "--half-life-days",
        type=positive_number,
        default=LiveProfilesConfig.half_life_days,
        help="half-life of the counters, as compacted_profiles' (default %(default)s)",
    )
    live.add_argument(
        "--max-batch",
        type=positive_int,
        default=LiveProfilesConfig.max_poll_messages,
        help="most messages applied as one batch (default %(default)s)",
    )
    live.add_argument(
        "--hbase-retry-seconds",
        type=positive_number,
        default=LiveProfilesConfig.hbase_retry_seconds,
        help="a batch HBase refuses is applied again, with backoff, for this long before the "
        "job exits 1; its offsets are committed only once it is written (default %(default)s)",
    )
    live.add_argument(
        "--rules-refresh-seconds",
        type=positive_number,
        default=LiveProfilesConfig.rules_refresh_seconds,
        help="the lake's segment rules are read again this often, between batches; a change "
        "applies from the next batch on (default %(default)s)",
    )
    add_metrics_options(live, "lag, events applied, batch time")
    live.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    add_hbase_options(live)
    shorten_usage(live)
    live.set_defaults(func=run_live_profiles)
    return live


def add_metrics_options(parser: argparse.ArgumentParser, measured: str) -> None:
    parser.add_argument(
        "--metrics-port",
        type=port_number,
        help=f"serve Prometheus metrics ({measured}) at /metrics on this port, without a key, "
        "and the liveness and readiness probes /healthz and /readyz (0 picks a free one; "
        "default: none)",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the metrics listener (default %(default)s: this machine only)",
    )
    parser.add_argument(
        "--liveness-timeout",
        type=positive_number,
        default=DEFAULT_LIVENESS_TIMEOUT_S,
        metavar="SECONDS",
        help="the metrics listener's /healthz answers 503 once the consume loop has not come "
        "back for this long (default %(default)s)",
    )


def _start(
    args: argparse.Namespace, name: str, command: str, needs_hbase: bool = False
) -> tuple[ConsumerMetrics | None, Any, threading.Event] | None:
    """The consumer's metrics and health and their listener (both None without
    ``--metrics-port``), and the event SIGTERM or Ctrl-C sets (and makes the consumer not
    ready); None, the error printed, when the port cannot be bound."""
    metrics = listener = None
    if args.metrics_port is not None:
        metrics = ConsumerMetrics(name, ConsumerHealth(args.liveness_timeout, needs_hbase))
        try:
            listener = metrics.serve(args.metrics_host, args.metrics_port)
        except OSError as error:
            print(
                f"profiles stream {command}: metrics port {args.metrics_port}: {error}",
                file=sys.stderr,
            )
            return None
    return metrics, listener, _stop_on_signals(None if metrics is None else metrics.health)


def _log_to_stderr(level: str) -> None:
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _stop_on_signals(health: ConsumerHealth | None) -> threading.Event:
    """Set by SIGTERM or Ctrl-C: the loop finishes the batch in hand, then returns."""
    stop = threading.Event()

    def stopping(*_: object) -> None:
        if health is not None:
            health.stopping()
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, stopping)
    return stop


def _after_step(
    metrics: ConsumerMetrics | None, read_lag: Callable[[], int]
) -> Callable[[], None] | None:
    """What runs after each step of the consume loop: the liveness beat and the lag."""
    if metrics is None:
        return None

    def after_step() -> None:
        metrics.health.turned()
        metrics.refresh_lag(read_lag)

    return after_step


_Read = TypeVar("_Read")


def lake_read(read: Callable[[], _Read]) -> Callable[[], _Read]:
    """``read`` with an S3 lake's errors as ``OSError``: the live job takes a failed re-read of
    its suppression list or rules as a warning and keeps what it has, and botocore's errors
    are not ``OSError`` (a moment of S3 unreachable ended the job)."""

    def reading() -> _Read:
        try:
            return read()
        except (BotoCoreError, ClientError) as error:
            raise OSError(f"the lake: {error}") from error

    return reading


def run_live_profiles(args: argparse.Namespace) -> int:
    _log_to_stderr(args.log_level)
    try:
        settings = EventBusSettings.from_env()
        hbase = settings_from_args(args)
        storage = LakeSettings.from_env(root=args.lake).storage()
        in_force = read_rules_in_force(storage)
        config = LiveProfilesConfig(
            group_id=args.group_id,
            rules=in_force.rules,
            half_life_days=args.half_life_days,
            key_types=key_types_from_env(),
            max_poll_messages=args.max_batch,
            hbase_retry_seconds=args.hbase_retry_seconds,
            rules_refresh_seconds=args.rules_refresh_seconds,
        )
    except InputError as error:
        print(f"profiles stream live-profiles: {error.message}", file=sys.stderr)
        return EXIT_INPUT
    except (EventBusSettingsError, SegmentRuleError, ValueError) as error:
        print(f"profiles stream live-profiles: {error}", file=sys.stderr)
        return EXIT_INPUT
    except (OSError, BotoCoreError, ClientError) as error:
        print(f"profiles stream live-profiles: the lake's segment rules: {error}", file=sys.stderr)
        return EXIT_FAILURE
    logger.info("live profiles: %s", in_force.describe())
    started = _start(args, "live_profiles", "live-profiles", needs_hbase=True)
    if started is None:
        return EXIT_FAILURE
    metrics, listener, stop = started
    if metrics is not None:
        metrics.applies_segment_rules(in_force.digest, len(in_force.rules))
    try:
        topic = ensure_topic(settings)
        with hbase_pool(hbase.with_overrides(pool_size=1)) as pool:
            with pool.connection() as connection:
                ensure_table(connection, config.table_name)
            if metrics is not None:
                metrics.health.hbase_answered()
            logger.info(
                "live profiles: topic %r (%d partitions) on %s into %s table %r, group %r",
                topic.name,
                topic.partitions,
                settings.bootstrap_servers,
                hbase.describe(),
                config.table_name,
                config.group_id,
            )
            job = LiveProfiles(
                settings,
                table_opener(pool, config.table_name),
                config,
                suppression=lake_read(lambda: Suppression.load(storage)),
                rules_in_force=lake_read(lambda: read_rules_in_force(storage)),
                on_rules=None
                if metrics is None
                else lambda rules: metrics.applies_segment_rules(rules.digest, len(rules.rules)),
                on_written=None if metrics is None else metrics.written,
                health=None if metrics is None else metrics.health,
            )
            job.start().run(
                stop, after_step=_after_step(metrics, lambda: group_lag(settings, config.group_id))
            )
    except (
        TopicError,
        ConsumeError,
        LiveJobError,
        KafkaException,
        BotoCoreError,
        ClientError,
        *HBASE_FAILURES,
    ) as error:
        print(f"profiles stream live-profiles: {error}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        if listener is not None:
            listener.shutdown()
    logger.info("live profiles stopped: %s", job.progress.summary())
    return 0


def run_lake_sink(args: argparse.Namespace) -> int:
    _log_to_stderr(args.log_level)
    try:
        settings = EventBusSettings.from_env()
        config = LakeSinkConfig(
            group_id=args.group_id,
            lateness=timedelta(seconds=args.lateness_seconds),
            flush_seconds=args.flush_seconds,
            flush_bytes=int(args.flush_mb * 2**20),
        )
        storage = LakeSettings.from_env(root=args.lake).storage()
    except (EventBusSettingsError, ValueError) as error:
        print(f"profiles stream lake-sink: {error}", file=sys.stderr)
        return EXIT_INPUT
    started = _start(args, "lake_sink", "lake-sink")
    if started is None:
        return EXIT_FAILURE
    metrics, listener, stop = started
    try:
        topic = ensure_topic(settings)
        logger.info(
            "lake sink: topic %r (%d partitions) on %s into %s, group %r",
            topic.name,
            topic.partitions,
            settings.bootstrap_servers,
            storage.root,
            config.group_id,
        )
        sink = LakeSink(
            settings,
            storage,
            config,
            on_written=None if metrics is None else metrics.written,
            health=None if metrics is None else metrics.health,
        )
        sink.start().run(stop, after_step=_after_step(metrics, sink.lag))
    except (
        TopicError,
        ConsumeError,
        SinkError,
        KafkaException,
        OSError,
        BotoCoreError,
        ClientError,
    ) as error:
        print(f"profiles stream lake-sink: {error}", file=sys.stderr)
        return EXIT_FAILURE
    finally:
        if listener is not None:
            listener.shutdown()
    logger.info("lake sink stopped")
    return 0
