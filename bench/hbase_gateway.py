"""Benchmark of the embedded HBase gateway through unmodified happybase.

Workloads, each with 1 and with 8 concurrent clients (separate processes, so client-side
Python does not share one GIL):

* batch put: ``Table.batch()`` of 1,000 rows x 2 cells per ``mutateRows``, reported in cells/s;
* get: ``Table.row()`` of a random existing row, latency p50/p99 and gets/s;
* multi-get: ``Table.rows()`` of 25 random existing rows, latency p50/p99 and calls/s;
* scan: ``Table.scan(batch_size=1000)`` over the whole table, rows/s summed over clients.

Seeds are fixed and the data is generated, so runs are comparable. ``--against both`` runs the
same workloads against a standalone Apache HBase (``profile_store/launchers/apache_hbase.py``, same
machine) and prints the gateway's ratio to it, per workload and client count. ``--workers 1,2``
runs the gateway once per number of worker processes. Usage::

    python bench/hbase_gateway.py [--rows 100000] [--gets 20000] [--transport buffered]
        [--workers N[,N...]] [--against gateway|both]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import happybase

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profile_store.hbase_gateway.process import EmbeddedGateway  # noqa: E402
from profile_store.hbase_gateway.workers import default_workers  # noqa: E402

TABLE = "bench"
VALUE_BYTES = 20
BATCH_ROWS = 1000
MULTIGET_ROWS = 25
BARS = {"get p50 ms": 0.2, "batch put cells/s": 50_000, "scan rows/s": 100_000}


def row_key(client: int, i: int) -> bytes:
    return b"c%02d-%09d" % (client, i)


def put_worker(kwargs: dict, table: str, client: int, rows: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    values = [rng.randbytes(VALUE_BYTES) for _ in range(64)]
    t = happybase.Connection(**kwargs).table(table)
    start = time.perf_counter()
    for first in range(0, rows, BATCH_ROWS):
        with t.batch() as batch:
            for i in range(first, min(first + BATCH_ROWS, rows)):
                batch.put(row_key(client, i), {b"cf:a": values[i % 64], b"cf:b": values[-i % 64]})
    # Read the last row back: a put counts once it is readable (the gateway may defer a batch).
    if not t.row(row_key(client, rows - 1)):
        raise AssertionError("the last row put is missing")
    return {"count": rows * 2, "seconds": time.perf_counter() - start}


def get_worker(kwargs: dict, table: str, keys: list[bytes], gets: int, seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    t = happybase.Connection(**kwargs).table(table)
    picks = [rng.choice(keys) for _ in range(gets)]
    latencies = []
    clock = time.perf_counter
    start = clock()
    for key in picks:
        t0 = clock()
        if not t.row(key):
            raise AssertionError(f"row {key!r} missing")
        latencies.append(clock() - t0)
    return {"count": gets, "seconds": clock() - start, "latencies": latencies}


def multiget_worker(
    kwargs: dict, table: str, keys: list[bytes], calls: int, seed: int
) -> dict[str, Any]:
    """``Table.rows()`` of MULTIGET_ROWS random existing rows per call."""
    rng = random.Random(seed)
    t = happybase.Connection(**kwargs).table(table)
    picks = [[rng.choice(keys) for _ in range(MULTIGET_ROWS)] for _ in range(calls)]
    latencies = []
    clock = time.perf_counter
    start = clock()
    for batch in picks:
        t0 = clock()
        if len(t.rows(batch)) != len(batch):
            raise AssertionError("rows missing")
        latencies.append(clock() - t0)
    return {"count": calls, "seconds": clock() - start, "latencies": latencies}


def scan_worker(kwargs: dict, table: str, expected: int) -> dict[str, Any]:
    t = happybase.Connection(**kwargs).table(table)
    start = time.perf_counter()
    count = sum(1 for _ in t.scan(batch_size=1000))
    if count != expected:
        raise AssertionError(f"scanned {count} rows, expected {expected}")
    return {"count": count, "seconds": time.perf_counter() - start}


def _run(target: Any, args: Any, barrier: Any, results: Any) -> None:
    barrier.wait()
    results.put(target(*args))


def run_clients(target: Any, per_client_args: list[tuple]) -> dict[str, Any]:
    """Run one process per client, started together; wall time covers all of them."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(len(per_client_args) + 1)
    results = ctx.Queue()
    processes = [
        ctx.Process(target=_run, args=(target, args, barrier, results)) for args in per_client_args
    ]
    for process in processes:
        process.start()
    barrier.wait()
    start = time.perf_counter()
    outcomes = [results.get() for _ in processes]
    wall = time.perf_counter() - start
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"a benchmark client failed (exit {process.exitcode})")
    latencies = sorted(x for o in outcomes for x in o.get("latencies", []))
    return {
        "total": sum(o["count"] for o in outcomes),
        "wall": wall,
        "latencies": latencies,
    }


def percentile(sorted_values: list[float], q: float) -> float:
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"SQLite {sqlite3.sqlite_version}, {platform.system()} {platform.release()}"
    )


def run_workloads(
    kwargs: dict, rows: int, gets: int, client_counts: list[int]
) -> tuple[list[tuple], dict[str, float], dict[tuple[str, int], tuple[float, ...]]]:
    """Every workload against the Thrift server ``kwargs`` names: table rows, a single-client
    summary, and per (workload, clients) the throughput (and p50, p99 ms where timed)."""
    results: list[tuple] = []
    summary: dict[str, float] = {}
    measured: dict[tuple[str, int], tuple[float, ...]] = {}
    admin = happybase.Connection(**kwargs)
    for clients in client_counts:
        name = f"{TABLE}_{clients}"
        if name.encode() in admin.tables():
            admin.delete_table(name, disable=True)
        admin.create_table(name, {"cf": {"max_versions": 1}})
        per_client = rows // clients
        put = run_clients(
            put_worker, [(kwargs, name, c, per_client, 1000 + c) for c in range(clients)]
        )
        rate = put["total"] / put["wall"]
        results.append(("batch put", clients, f"{rate:,.0f} cells/s", "", ""))
        measured["batch put", clients] = (rate,)
        summary.setdefault("batch put cells/s", rate)

        keys = [row_key(c, i) for c in range(clients) for i in range(per_client)]
        for label, worker, calls, unit in (
            ("get", get_worker, gets, "gets/s"),
            (f"multi-get of {MULTIGET_ROWS}", multiget_worker, gets // 10, "calls/s"),
        ):
            timed = run_clients(
                worker, [(kwargs, name, keys, calls // clients, 2000 + c) for c in range(clients)]
            )
            p50 = percentile(timed["latencies"], 0.50) * 1e3
            p99 = percentile(timed["latencies"], 0.99) * 1e3
            rate = timed["total"] / timed["wall"]
            results.append((label, clients, f"{rate:,.0f} {unit}", f"{p50:.3f}", f"{p99:.3f}"))
            measured[label, clients] = (rate, p50, p99)
            summary.setdefault(f"{label} p50 ms", p50)
            summary.setdefault(f"{label} p99 ms", p99)

        scan = run_clients(scan_worker, [(kwargs, name, len(keys)) for _ in range(clients)])
        rate = scan["total"] / scan["wall"]
        results.append(("scan", clients, f"{rate:,.0f} rows/s", "", ""))
        measured["scan", clients] = (rate,)
        summary.setdefault("scan rows/s", rate)
        admin.delete_table(name, disable=True)
    admin.close()
    return results, summary, measured


def print_table(title: str, results: list[tuple]) -> None:
    print(f"\n{title}")
    header = ("workload", "clients", "throughput", "p50 ms", "p99 ms")
    widths = [max(len(str(r[i])) for r in [header, *results]) for i in range(5)]
    for line in [header, tuple("-" * w for w in widths), *results]:
        print(
            "  ".join(
                str(v).rjust(w) if i else str(v).ljust(w)
                for i, (v, w) in enumerate(zip(line, widths, strict=True))
            )
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows loaded (2 cells each)")
    parser.add_argument("--gets", type=int, default=20_000, help="gets per run (split by clients)")
    parser.add_argument("--clients", default="1,8", help="comma-separated client counts")
    parser.add_argument("--transport", default="buffered", choices=["buffered", "framed"])
    parser.add_argument("--protocol", default="binary", choices=["binary", "compact"])
    parser.add_argument("--data-dir", help="store directory (default: a fresh temp dir)")
    parser.add_argument(
        "--workers",
        default=str(default_workers()),
        help="comma-separated gateway worker-process counts, one run each (default: the "
        "gateway's default, %(default)s)",
    )
    parser.add_argument(
        "--against",
        default="gateway",
        choices=["gateway", "both"],
        help="'both' also runs every workload against a standalone Apache HBase and prints "
        "the gateway's ratio to it",
    )
    args = parser.parse_args(argv)
    client_counts = [int(c) for c in args.clients.split(",")]
    shape = (
        f"{args.transport}/{args.protocol}, {args.rows:,} rows x 2 cells of {VALUE_BYTES} B, "
        f"{args.gets:,} gets, {args.gets // 10:,} multi-gets of {MULTIGET_ROWS}"
    )

    data_dir = Path(args.data_dir or tempfile.mkdtemp(prefix="hbase-bench-"))
    print(f"\nmachine: {machine()}")
    runs = []
    for workers in [int(w) for w in args.workers.split(",")]:
        with EmbeddedGateway(
            data_dir, transport=args.transport, protocol=args.protocol, workers=workers
        ) as gateway:
            results, summary, measured = run_workloads(
                gateway.connection_kwargs(), args.rows, args.gets, client_counts
            )
        print_table(f"Embedded gateway, {workers} worker process(es) ({shape})", results)
        runs.append((workers, summary, measured))
    workers, summary, measured = runs[0]
    if args.against == "both":
        from profile_store.launchers.apache_hbase import HBASE_VERSION, ApacheHBase

        with tempfile.TemporaryDirectory(prefix="apache-hbase-bench-") as hbase_dir:
            hbase = ApacheHBase(hbase_dir).start()
            try:
                port = hbase.port
                if (args.transport, args.protocol) != ("buffered", "binary"):
                    port = hbase.thrift_server(args.transport, args.protocol)
                kwargs = hbase.connection_kwargs(port, args.transport, args.protocol)
                apache, _, apache_measured = run_workloads(
                    kwargs, args.rows, args.gets, client_counts
                )
            finally:
                hbase.stop(graceful=False)
        print_table(f"Apache HBase {HBASE_VERSION} standalone, Thrift-1 ({shape})", apache)
        for workers, _, measured in runs:
            print(
                f"\ngateway ({workers} worker(s)) / Apache HBase: throughput (> 1 is better), "
                "p50 and p99 (< 1 is better):"
            )
            for (label, clients), values in measured.items():
                ratios = ", ".join(
                    f"{value / apache_measured[label, clients][i]:.2f}x"
                    for i, value in enumerate(values)
                )
                print(f"  {label:<16} {clients:>2} client(s)  {ratios}")
        workers, summary, measured = runs[0]

    print(f"\nbars (single client, {workers} worker(s)):")
    ok = True
    for bar, limit in BARS.items():
        value = summary[bar]
        passed = value <= limit if bar.endswith("ms") else value >= limit
        ok &= passed
        print(
            f"  {bar:<18} {value:>12,.3f}  {'<=' if bar.endswith('ms') else '>='} {limit:,}  "
            f"{'ok' if passed else 'MISSED'}"
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
