"""The day's profile write, path by path and store by store: the measurement behind the path
each store takes.

Over the lake ``bench/daily_run.py --whole-graph --days 1 --events-per-day N`` left (seed 7; run
it first), ``compacted_profiles`` of the lake's last day is materialized alone, each time in a
new process (a cold JVM, as in a production run; the Spark session is started before the clock)
and into an empty profiles table, for each case ``STORE:PATH:PARTITIONS``:

* ``gateway:thrift:8``: Thrift puts from the executors into the embedded gateway;
* ``gateway:bulk:8``: the cells written as files by Spark, adopted by the gateway's store;
* ``apache:thrift:N``: Thrift puts from the executors into the project's standalone Apache HBase
  (one region server and its Thrift server on this machine), over N connections at once (the
  rows' partitions, ``SPARK_SHUFFLE_PARTITIONS``; each executor task writes its partition in
  batches of 500 rows).

HBase's own bulk load (HFiles handed to the region servers) is not a case: writing HFiles from
this project's Spark (4.3, Scala 2.13) needs the HBase Spark connector, published only for Spark
3 and Scala 2.12, or a JVM class turning Python rows into HBase cells, which nothing published
provides (docs/benchmarks.md, *Profile rows in bulk*).

Per run it prints the step's wall seconds, the CPU-seconds of the run's process tree (the
driver, its JVM and Python workers, and the embedded gateway it starts) and of Apache HBase's
JVMs, the rows and cells written, and cells per second of the step (the rows computed and
written)::

    .venv/bin/python bench/profile_write.py [--events-per-day 200000] [--runs 1]
        [--cases gateway:thrift:8,gateway:bulk:8,apache:thrift:2,apache:thrift:8]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)
from run_cost import tree_cpu_seconds  # noqa: E402  (bench/run_cost.py)

STORES = ("gateway", "apache")
PATHS = ("thrift", "bulk")


@dataclass(frozen=True)
class Case:
    store: str
    path: str
    partitions: int

    @classmethod
    def parse(cls, text: str) -> Case:
        try:
            store, path, partitions = text.split(":")
            case = cls(store, path, int(partitions))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--cases: expected STORE:PATH:PARTITIONS such as apache:thrift:8, got {text!r}"
            ) from None
        if case.store not in STORES or case.path not in PATHS or case.partitions < 1:
            raise argparse.ArgumentTypeError(
                f"--cases: {text!r}: the store is one of {STORES}, the path one of {PATHS}, "
                "the partitions at least 1"
            )
        if case.store == "apache" and case.path == "bulk":
            raise argparse.ArgumentTypeError(
                f"--cases: {text!r}: the bulk path writes into the embedded gateway's store only"
            )
        return case

    def __str__(self) -> str:
        return f"{self.store}:{self.path}:{self.partitions}"


def run_child(day: str) -> dict:
    """In the child: ``compacted_profiles`` of ``day`` alone, as the environment configures it."""
    from dagster import DagsterInstance, materialize

    from profile_assets.compaction_assets import compacted_profiles
    from profile_store.spark.session import spark_session_from_env
    from resources import resources_from_env

    spark_session_from_env()  # started before the clock, as a long-running driver would be
    path = os.environ["BENCH_PROFILE_WRITE"]
    config = {"profile_write": path, "bulk_min_rows": 1}
    cpu_before, started = tree_cpu_seconds(), time.perf_counter()
    result = materialize(
        [compacted_profiles],
        partition_key=day,
        resources=resources_from_env(),
        instance=DagsterInstance.ephemeral(),
        run_config={
            "ops": {"compacted_profiles": {"config": config}},
            "loggers": {"console": {"config": {"log_level": "WARNING"}}},
        },
    )
    seconds, cpu = time.perf_counter() - started, tree_cpu_seconds() - cpu_before
    (event,) = result.get_asset_materialization_events()
    metadata = event.step_materialization_data.materialization.metadata
    return {
        "seconds": round(seconds, 2),
        "cpu_s": round(cpu, 2),
        "rows": metadata["dagster/row_count"].value,
        "path_taken": metadata["profile_write"].value,
    }


def stored_cells(host: str, port: int, table: str) -> int:
    """Every cell of the profiles table: what the write left."""
    import happybase

    connection = happybase.Connection(host, port)
    try:
        return sum(len(cells) for _, cells in connection.table(table).scan(batch_size=2000))
    finally:
        connection.close()


def jvm_cpu_seconds(pids: tuple[int, ...]) -> float:
    """CPU-seconds so far of these processes (Apache HBase's JVMs, which live on)."""
    return sum(tree_cpu_seconds(pid) for pid in pids)


def measure_case(case: Case, env: dict, day: str, store: Path, hbase) -> dict | None:
    """One run of the case in a new process: its figures, with the cells the table holds after
    it and, on Apache HBase, the CPU its JVMs spent meanwhile; None when the run failed."""
    from profile_store.profiles.table import PROFILE_TABLE

    if case.store == "apache":
        prefix = store.name  # a table of its own in the one Apache HBase
        env = {**env, **hbase.environment(), "HBASE_TABLE_PREFIX": prefix}
        jvm_before = jvm_cpu_seconds(hbase.pids)
    else:
        env = {**env, "PROFILES_HBASE_DATA_DIR": str(store)}
    completed = subprocess.run(
        [sys.executable, __file__, "--child-day", day],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        print(completed.stderr[-4000:], file=sys.stderr)
        return None
    found = json.loads(completed.stdout.strip().splitlines()[-1])
    if case.store == "apache":
        found["store_cpu_s"] = round(jvm_cpu_seconds(hbase.pids) - jvm_before, 2)
        found["cells"] = stored_cells(hbase.host, hbase.port, f"{prefix}_{PROFILE_TABLE}")
    else:
        found["store_cpu_s"] = None  # the gateway is in the run's tree
        found["cells"] = gateway_cells(store)
    return found


def gateway_cells(store: Path) -> int:
    """Every cell of the profiles table in a gateway store the run left (its gateway stopped)."""
    from profile_store.hbase_gateway.process import EmbeddedGateway
    from profile_store.profiles.table import PROFILE_TABLE

    with EmbeddedGateway(store) as gateway:
        return stored_cells(gateway.host, gateway.port, PROFILE_TABLE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events-per-day", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--cases", default="gateway:thrift:8,gateway:bulk:8,apache:thrift:2,apache:thrift:8"
    )
    parser.add_argument("--runs", type=int, default=1, help="runs of each case, in turn")
    parser.add_argument("--work-dir", type=Path, default=Path("data/bench-daily-run"))
    parser.add_argument("--child-day", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_day:
        print(json.dumps(run_child(args.child_day)), flush=True)
        return 0
    try:
        cases = [Case.parse(text) for text in args.cases.split(",")]
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))
    source = args.work_dir / f"1x{args.events_per_day}-seed{args.seed}" / "lake"
    days = sorted(p.name.removeprefix("date=") for p in (source / "events").glob("date=*"))
    if len(days) < 2:
        print(
            f"no bench lake of two days at {source}: run `.venv/bin/python bench/daily_run.py "
            f"--whole-graph --days 1 --events-per-day {args.events_per_day}` first",
            file=sys.stderr,
        )
        return 2
    day = days[-1]
    print(f"machine: {machine()}; lake {source}, day {day}", flush=True)

    from profile_store.launchers.apache_hbase import temporary_hbase

    results: list[tuple[Case, dict]] = []
    with contextlib.ExitStack() as stack:
        scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-write-")))
        lake = scratch / "lake"
        shutil.copytree(source, lake)  # the day's lake state is rewritten by each run
        hbase = None
        if any(case.store == "apache" for case in cases):
            hbase = stack.enter_context(temporary_hbase(heap="2g"))
        for run in range(args.runs):
            for number, case in enumerate(cases):
                env = {
                    **os.environ,
                    "PYTHONPATH": str(REPO),
                    "PYSPARK_PYTHON": sys.executable,
                    "PROFILES_LAKE_ROOT": str(lake),
                    "PROFILES_START_DATE": days[0],
                    "SPARK_SHUFFLE_PARTITIONS": str(case.partitions),
                    "BENCH_PROFILE_WRITE": case.path,
                }
                found = measure_case(case, env, day, scratch / f"store-{run}-{number}", hbase)
                if found is None:
                    return 1
                print(str(case), json.dumps(found), flush=True)
                results.append((case, found))

    print(
        "\n| case (store:path:partitions) | path taken | rows | cells | wall s | CPU-s of the "
        "run | CPU-s of Apache HBase | cells per second of the step |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for case, found in results:
        store_cpu = "" if found["store_cpu_s"] is None else f"{found['store_cpu_s']:.1f}"
        print(
            f"| {case} | {found['path_taken']} | {found['rows']:,} | {found['cells']:,} | "
            f"{found['seconds']:.1f} | {found['cpu_s']:.1f} | {store_cpu} | "
            f"{found['cells'] / found['seconds']:,.0f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
