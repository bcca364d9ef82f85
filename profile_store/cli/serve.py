"""``profiles serve``: one HTTP service for the audience estimates and the profile reads.

```
profiles serve --host 127.0.0.1 --port 8080 --tenants tenants.json   # OpenAPI at /docs
```

One uvicorn process, one happybase pool, one set of API keys: the audience builder page at ``/``
with its endpoints (saved audiences in the HBase table ``audiences``, created at start), ``POST
/v1/audiences/estimate``, ``GET /v1/health`` and the ``/v1/profiles``, ``/v1/connected`` and
``/v1/masters`` reads; with ``admin_api_keys`` in the tenants file, the erasure requests
(``/v1/admin/erasure-requests``, over the lake of ``--lake``). ``profiles audience serve`` is
the same command under its older name. It runs until SIGINT/SIGTERM, then closes the pool (and
the embedded gateway, when it started one) and exits 0. Exit codes and HBase flags are
``conventions``'. Connections get a deadline on their headers (``service.header_deadline``); with
``--metrics-port``, Prometheus metrics are served on that port (``service.metrics``). With
``PROFILES_KAFKA_BOOTSTRAP_SERVERS`` set, ``POST /v1/events`` writes events to Kafka
(``routes/events``); unset, it answers 503 ``kafka_not_configured``.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from profile_store.audiences.sketch_table import SKETCH_TABLE, sketch_table_opener
from profile_store.cli.argument_types import port_number
from profile_store.cli.conventions import (
    EXIT_FAILURE,
    EXIT_INPUT,
    EXIT_OK,
    add_hbase_options,
    reports_failures,
    settings_from_args,
    shorten_usage,
)

if TYPE_CHECKING:
    from profile_store.event_bus.settings import EventBusSettings

logger = logging.getLogger(__name__)

KAFKA_VARIABLE = "PROFILES_KAFKA_BOOTSTRAP_SERVERS"

SERVE_HELP = "serve the audience and profile HTTP API (OpenAPI at /docs)"


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the top-level ``serve`` sub-command on the ``profiles`` CLI."""
    parser = subparsers.add_parser(
        "serve",
        help=SERVE_HELP,
        description="Run the HTTP service with uvicorn until SIGINT/SIGTERM.",
    )
    return configure_parser(parser)


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The service's options on ``parser`` (also used by ``profiles audience serve``)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default %(default)s)")
    parser.add_argument(
        "--port",
        type=port_number,
        default=8080,
        help="TCP port; 0 picks a free one (default %(default)s)",
    )
    parser.add_argument(
        "--tenants",
        type=Path,
        required=True,
        help="tenants JSON: the app_ids each tenant may query and its API keys, or the "
        "environment variables (key_env) or files (key_file) holding them (see "
        "examples/tenants.json)",
    )
    parser.add_argument(
        "--lake",
        metavar="ROOT",
        help="lake of the erasure requests: directory or s3://bucket/prefix (default: "
        "PROFILES_LAKE_ROOT, else data/lake)",
    )
    parser.add_argument(
        "--metrics-port",
        type=port_number,
        help="serve Prometheus metrics at /metrics on this port, without a key (0 picks a free "
        "one; default: no metrics listener)",
    )
    parser.add_argument(
        "--metrics-host",
        default="127.0.0.1",
        help="address of the metrics listener (default %(default)s: this machine only)",
    )
    parser.add_argument("--log-level", default="info", help="logging level (default %(default)s)")
    add_hbase_options(parser)
    shorten_usage(parser)
    parser.set_defaults(func=run_serve)
    return parser


@reports_failures(SKETCH_TABLE)
def run_serve(args: argparse.Namespace) -> int:
    # The service's stack is imported here, not at the top: ``profiles audience`` registers
    # ``audience serve`` through this module, and its read commands must not pay for it.
    import uvicorn

    from profile_store.audiences.engine import AudienceEngine
    from profile_store.audiences.saved import AUDIENCE_TABLE, SavedAudiences
    from profile_store.audiences.saved import ensure_table as ensure_audience_table
    from profile_store.erasure.requests import max_profiles_from_env
    from profile_store.event_bus.producer import EventProducer
    from profile_store.event_bus.settings import EventBusSettings, EventBusSettingsError
    from profile_store.hbase.pool import hbase_pool, table_opener
    from profile_store.lake.settings import LakeSettings
    from profile_store.profiles.reads import ProfileReader, key_types_from_env
    from profile_store.profiles.table import PROFILE_TABLE
    from profile_store.realtime.collector import EventCollector
    from profile_store.service.app import create_app
    from profile_store.service.conventions import body_timeout_s
    from profile_store.service.header_deadline import deadline_protocol, header_timeout_s
    from profile_store.service.metrics import serve_metrics
    from profile_store.service.routes.erasure import ErasureDesk
    from profile_store.service.tenants import TenantConfigError, Tenants
    from profile_store.settings.definitions import COLLECTOR_DELIVERY_TIMEOUT_SECONDS

    try:
        tenants = Tenants.from_file(args.tenants)
        settings = settings_from_args(args)
        lake = LakeSettings.from_env(root=args.lake)
        key_types = key_types_from_env()
        erasure_bound = max_profiles_from_env()  # a bad PROFILES_ERASURE_MAX_PROFILES: exit 2
        body_timeout_s()  # a bad PROFILES_HTTP_BODY_TIMEOUT_SECONDS stops the start, not a request
        header_timeout = header_timeout_s()
        bus = EventBusSettings.from_env() if os.environ.get(KAFKA_VARIABLE) else None
        delivery_timeout = COLLECTOR_DELIVERY_TIMEOUT_SECONDS.read()
    except TenantConfigError as exc:
        print(f"error: tenants: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except (ValueError, EventBusSettingsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    level = args.log_level.upper()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    metrics = None
    try:
        if args.metrics_port is not None:
            metrics = serve_metrics(args.metrics_host, args.metrics_port)
    except OSError as exc:
        print(f"error: metrics port {args.metrics_port}: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    server: uvicorn.Server | None = None
    producer = None
    try:
        if bus is not None:
            producer = EventProducer(bus, delivery_timeout_s=delivery_timeout)
            threading.Thread(target=_ensure_topic, args=(bus,), daemon=True).start()
        with _stop_on_signals(), hbase_pool(settings) as pool:
            with pool.connection() as connection:
                ensure_audience_table(connection)
            app = create_app(
                AudienceEngine(sketch_table_opener(pool)),
                tenants,
                ProfileReader(table_opener(pool, PROFILE_TABLE), key_types),
                SavedAudiences(table_opener(pool, AUDIENCE_TABLE)),
                ErasureDesk(
                    lake.storage(), table_opener(pool, PROFILE_TABLE), key_types, erasure_bound
                ),
                EventCollector(producer) if producer is not None else None,
            )
            logger.info("service: %d tenants, HBase: %s", len(tenants), settings.describe())
            server = uvicorn.Server(
                uvicorn.Config(
                    app,
                    host=args.host,
                    port=args.port,
                    log_level=level.lower(),
                    http=deadline_protocol(header_timeout),
                )
            )
            server.run()
    except _Stopped as stopped:
        logger.info("service stopped by %s", stopped)
    finally:
        if producer is not None:
            producer.close()
        if metrics is not None:
            metrics.shutdown()
            metrics.server_close()
    return EXIT_OK if server is not None and server.started else EXIT_FAILURE


def _ensure_topic(bus: EventBusSettings) -> None:
    """The events topic, created when missing, beside the start (the service does not wait
    for Kafka); Kafka down is a warning, not a stop: the collector answers 503 until it is
    back."""
    from profile_store.event_bus.topics import TopicError, ensure_topic

    try:
        topic = ensure_topic(bus, timeout=10.0)
    except TopicError as exc:
        logger.warning("collector: Kafka at %s: %s", bus.bootstrap_servers, exc)
        return
    logger.info(
        "collector: topic %r (%d partitions) on %s",
        topic.name,
        topic.partitions,
        bus.bootstrap_servers,
    )


class _Stopped(Exception):
    """SIGINT or SIGTERM: uvicorn shuts down gracefully, then re-raises the signal."""


def _raise_stopped(signum: int, _frame: object) -> None:
    raise _Stopped(signal.Signals(signum).name)


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Turn the re-raised signal into ``_Stopped``, so the pool and gateway are closed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise_stopped) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def main(argv: list[str] | None = None) -> int:
    args = configure_parser(argparse.ArgumentParser(prog="profiles serve")).parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
