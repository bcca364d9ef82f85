"""Real servers in the foreground until Ctrl-C: ``make hbase`` and ``make spark-cluster``.

```
python -m profile_store.cli.launchers apache-hbase [--data-dir DIR] [--port 9090]
python -m profile_store.cli.launchers spark-standalone [--work-dir DIR] [--cores 2] [--memory 2g]
    [--workers 1] [--start-timeout 300]
```

Each prints the environment variables that point the pipeline at the server once it is up.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pyspark

from profile_store.cli.argument_types import name_value, positive_int, positive_number
from profile_store.launchers.apache_hbase import HBASE_VERSION, THRIFT_IDLE_TIMEOUT, ApacheHBase
from profile_store.launchers.child_processes import wait_for_interrupt
from profile_store.launchers.spark_standalone import (
    DEFAULT_START_TIMEOUT,
    ClusterStartError,
    SparkStandalone,
)


def thrift_settings(args: argparse.Namespace) -> dict[str, str]:
    """The Thrift server's properties from ``--thrift-setting`` and ``--thrift-idle-timeout``."""
    settings = dict(args.thrift_setting)
    if args.thrift_idle_timeout is not None:
        settings[THRIFT_IDLE_TIMEOUT] = str(round(args.thrift_idle_timeout * 1000))
    return settings


def run_apache_hbase(args: argparse.Namespace) -> int:
    started = time.monotonic()
    with ApacheHBase(
        args.data_dir, thrift_port=args.port, thrift_settings=thrift_settings(args)
    ) as hbase:
        print(
            f"Apache HBase {hbase.version} up in {time.monotonic() - started:.0f} s "
            f"(data and logs in {hbase.data_dir}); point the pipeline at it with:\n"
            + " ".join(f"{k}={v}" for k, v in hbase.environment().items())
            + "\nCtrl-C stops it.",
            flush=True,
        )
        wait_for_interrupt()
        print("stopping Apache HBase ...", flush=True)
    return 0


def run_spark_standalone(args: argparse.Namespace) -> int:
    cluster = SparkStandalone(
        args.work_dir,
        cores=args.cores,
        memory=args.memory,
        workers=args.workers,
        start_timeout=args.start_timeout,
    )
    try:
        cluster.start()
    except ClusterStartError as error:
        print(f"spark-standalone: {error}", file=sys.stderr)
        return 1
    try:
        print(
            f"Spark {pyspark.__version__} standalone: master {cluster.master_url}, status page "
            f"http://127.0.0.1:{cluster.webui_port}/ (logs in {args.work_dir}); run the pipeline "
            "on it with (SPARK_LOCAL_IP: the driver binds an address the executors reach):\n"
            + " ".join(f"{k}={v}" for k, v in cluster.environment().items())
            + "\nCtrl-C stops it.",
            flush=True,
        )
        wait_for_interrupt()
        print("stopping the Spark cluster ...", flush=True)
    finally:
        cluster.stop()
    return 0


def positive_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = 0.0
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return seconds


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m profile_store.cli.launchers",
        description="Run a real server on this machine until interrupted.",
    )
    servers = parser.add_subparsers(dest="server", metavar="SERVER", required=True)
    hbase = servers.add_parser(
        "apache-hbase",
        help=f"Apache HBase {HBASE_VERSION} standalone with its Thrift-1 server",
        description=f"Run Apache HBase {HBASE_VERSION} standalone with its Thrift-1 server "
        "until interrupted.",
    )
    hbase.add_argument("--data-dir", type=Path, default=Path("data/apache-hbase"))
    hbase.add_argument("--port", type=int, default=9090, help="Thrift port (default 9090)")
    hbase.add_argument(
        "--thrift-idle-timeout",
        type=positive_number,
        metavar="SECONDS",
        help="close a Thrift connection that sent nothing for this long (HBase's default: 60)",
    )
    hbase.add_argument(
        "--thrift-setting",
        type=name_value,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a configuration property of the Thrift server, e.g. "
        "hbase.thrift.minWorkerThreads=32 (repeatable)",
    )
    hbase.set_defaults(func=run_apache_hbase)
    spark = servers.add_parser(
        "spark-standalone",
        help="a Spark standalone master and worker (pyspark's own)",
        description="Run a Spark standalone master and worker (pyspark's own) until interrupted.",
    )
    spark.add_argument("--work-dir", type=Path, default=Path("data/spark-standalone"))
    spark.add_argument("--cores", type=int, default=2, help="each worker's cores (default 2)")
    spark.add_argument("--memory", default="2g", help="each worker's memory (default 2g)")
    spark.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        help="workers, each of --cores cores and --memory (default 1)",
    )
    spark.add_argument(
        "--start-timeout",
        type=positive_seconds,
        default=DEFAULT_START_TIMEOUT,
        metavar="SECONDS",
        help="how long the master, then the workers, may take to come up (default %(default)g)",
    )
    spark.set_defaults(func=run_spark_standalone)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
