"""``profiles stream lake-sink``: the events topic into the lake's landing area, until stopped.

A long-running process (one or more per topic: they share the work through Kafka's consumer
group). SIGTERM or Ctrl-C writes and commits what it holds, then exits 0; after a crash, the
next start finishes the batch that was in progress (``lake_sink``). Exit 1: Kafka or the lake
failed; 2: a setting is wrong.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from datetime import timedelta
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from confluent_kafka import KafkaException

from profile_store.cli.argument_types import port_number, positive_number, whole_number
from profile_store.cli.conventions import EXIT_FAILURE, EXIT_INPUT
from profile_store.event_bus.consumer import ConsumeError
from profile_store.event_bus.settings import EventBusSettings, EventBusSettingsError
from profile_store.event_bus.topics import TopicError, ensure_topic
from profile_store.lake.settings import LakeSettings
from profile_store.realtime.lake_sink import (
    DEFAULT_FLUSH_BYTES,
    DEFAULT_FLUSH_SECONDS,
    DEFAULT_GROUP_ID,
    DEFAULT_LATENESS,
    LakeSink,
    LakeSinkConfig,
    SinkError,
)
from profile_store.realtime.sink_metrics import ConsumerMetrics

logger = logging.getLogger("profile_store.realtime")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``profiles stream`` and its ``lake-sink`` command."""
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
    sink.add_argument(
        "--metrics-port",
        type=port_number,
        help="serve Prometheus metrics (lag, events written, write time) at /metrics on this "
        "port, without a key (0 picks a free one; default: none)",
    )
    sink.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the metrics listener (default %(default)s: this machine only)",
    )
    sink.add_argument("--log-level", default="INFO", help="Python logging level (default INFO)")
    sink.set_defaults(func=run_lake_sink)
    return parser


def run_lake_sink(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
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
    metrics = ConsumerMetrics("lake_sink") if args.metrics_port is not None else None
    listener = None
    if metrics is not None:
        try:
            listener = metrics.serve(args.metrics_host, args.metrics_port)
        except OSError as error:
            print(
                f"profiles stream lake-sink: metrics port {args.metrics_port}: {error}",
                file=sys.stderr,
            )
            return EXIT_FAILURE
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
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
            settings, storage, config, on_written=None if metrics is None else metrics.written
        )
        sink.start().run(
            stop, after_step=None if metrics is None else lambda: metrics.refresh_lag(sink.lag)
        )
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
