"""Wall time of the ``profiles`` read commands, each a fresh process as a user runs it.

Fixed seed. Writes a week of audience sketches (3 event types of one app, 2,000 users a day)
and an empty ``profiles`` table into an embedded gateway over a temporary directory, then runs
each command ``--repeat`` times and prints the median, fastest and slowest wall time, and the
median CPU time of the command's process (user + system; on a loaded machine the wall time
waits for the CPUs, the CPU time does not):

- ``audience estimate`` of a 7-day funnel against the running gateway (``--hbase-host``), and
  with the embedded gateway the command starts for itself (``--hbase-data-dir``);
- ``profile get`` of an id the empty table does not hold (its answer: no profile, exit 2),
  against the running gateway;
- ``python -c pass``, the interpreter's own start, for reference.

    .venv/bin/python bench/cli_latency.py [--repeat 10]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import happybase
from datasketches import AccumulatorPolicy, update_theta_sketch, update_tuple_sketch

from profile_store.audiences.built_days import built_day_cells
from profile_store.audiences.rowkey import AGGREGATE_HASH, sketch_rowkey
from profile_store.audiences.sketch_table import SKETCH_TABLE, ensure_table, write_rows
from profile_store.audiences.tuple_serde import SERDE
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.profiles.table import ensure_table as ensure_profile_table

SEED = 7
FIRST_DAY = date(2026, 11, 1)
DAYS = 7
USERS_PER_DAY = 2_000
APP = "com.shop"
EVENTS = ("install", "add_to_cart", "purchase")


def aggregate_row(event: str, day: date, users: list[str]) -> dict:
    theta = update_theta_sketch(12)
    counts = update_tuple_sketch(AccumulatorPolicy(), 12)
    for user in users:
        theta.update(user)
        counts.update(user, 1)
    return {
        "rowkey": sketch_rowkey(APP, event, day, AGGREGATE_HASH).decode(),
        "row_kind": "aggregate",
        "theta": theta.compact().serialize(),
        "counts": counts.compact().serialize(SERDE),
        "events": len(users),
        "users_estimate": float(len(users)),
        "kept_attributes": [],
    }


def write_week(connection: happybase.Connection) -> None:
    """A week of aggregate rows with their built-day markers, and an empty profiles table."""
    rng = random.Random(SEED)
    ensure_table(connection)
    ensure_profile_table(connection)
    table = connection.table(SKETCH_TABLE)
    for offset in range(DAYS):
        day = FIRST_DAY + timedelta(days=offset)
        rows = [
            aggregate_row(event, day, [f"u{rng.randrange(20_000)}" for _ in range(USERS_PER_DAY)])
            for event in EVENTS
        ]
        write_rows(table, rows)
        table.put(*built_day_cells(day, [(APP, event) for event in EVENTS]))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], repeat: int, expected_exit: int = 0) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each of ``repeat`` runs of ``argv``."""
    walls, cpus = [], []
    for _ in range(repeat):
        cpu = _children_cpu()
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True)
        walls.append(time.perf_counter() - started)
        cpus.append(_children_cpu() - cpu)
        if done.returncode != expected_exit:
            raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr}")
    return walls, cpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args()
    profiles = [sys.executable, "-m", "profile_store.cli"]
    with tempfile.TemporaryDirectory() as scratch:
        query = Path(scratch) / "funnel.json"
        last = FIRST_DAY + timedelta(days=DAYS - 1)
        dates = {"date_from": FIRST_DAY.isoformat(), "date_to": last.isoformat()}
        leaf = {"app_id": APP, **dates}
        funnel = {
            "difference": [
                {"intersection": [{**leaf, "event_type": "install"},
                                  {**leaf, "event_type": "add_to_cart"}]},
                {**leaf, "event_type": "purchase"},
            ]
        }  # fmt: skip
        query.write_text(json.dumps(funnel))
        data_dir = Path(scratch) / "hbase"
        with EmbeddedGateway(data_dir) as gateway:
            connection = happybase.Connection(**gateway.connection_kwargs())
            write_week(connection)
            connection.close()
            running = ["--hbase-host", gateway.host, "--hbase-port", str(gateway.port)]
            estimate = [*profiles, "audience", "estimate", str(query), *running]
            get = [*profiles, "profile", "get", "cookie-1", *running]
            measured = {
                "python -c pass": timed([sys.executable, "-c", "pass"], args.repeat),
                "audience estimate (running gateway)": timed(estimate, args.repeat),
                "profile get (running gateway)": timed(get, args.repeat, expected_exit=2),
            }
        embedded = [*profiles, "audience", "estimate", str(query), "--hbase-data-dir"]
        measured["audience estimate (embedded gateway started)"] = timed(
            [*embedded, str(data_dir)], args.repeat
        )
    print(f"{args.repeat} runs each; seconds")
    print(f"{'command':<46} {'wall median':>11} {'fastest':>8} {'slowest':>8} {'CPU median':>10}")
    for name, (walls, cpus) in measured.items():
        print(
            f"{name:<46} {statistics.median(walls):>11.3f} {min(walls):>8.3f} "
            f"{max(walls):>8.3f} {statistics.median(cpus):>10.3f}"
        )


if __name__ == "__main__":
    main()
