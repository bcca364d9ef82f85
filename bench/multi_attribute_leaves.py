"""Benchmark: leaves filtering on several attributes, on rating-style traffic over 50+ days.

Fixed seed. Generates, in Spark, one app's ``rate`` events with five skewed low-cardinality
attributes (rating 10 values, genre 12, decade 8, device 4, country 6: a few thousand value
combinations a day), builds each day's sketch rows as ``audience_sketches`` does and writes
them into an embedded gateway, then times from one client, over the whole range:

* one-attribute leaves (marginal rows, one multi-get);
* two-attribute leaves through pair rows (one multi-get), and the same leaves through the
  combination scan (``read_pair_rows=False``: how they were answered before pair rows);
* three-attribute leaves (the scan);
* trees: a two-attribute leaf intersected with (or minus) a one-attribute leaf.

Prints p50/p99 latency per kind with the bar (p99 <= 50 ms for two-attribute leaves and their
trees), rows written per kind, and checks that both paths give identical answers. Usage::

    python bench/multi_attribute_leaves.py [--days 50] [--events-per-day 60000] [--queries 300]
        [--scan-queries 20]
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
from collections import Counter
from datetime import date, timedelta
from pathlib import Path

import happybase
import numpy as np
from pyspark.sql import functions as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from audiences import spark_session  # noqa: E402  (bench/audiences.py)
from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

from profile_store.audiences.attribute_stats import (  # noqa: E402
    TrimRule,
    daily_attribute_stats,
    trim_decisions,
)
from profile_store.audiences.engine import AudienceEngine  # noqa: E402
from profile_store.audiences.rowkey import built_day_rowkey, day_component  # noqa: E402
from profile_store.audiences.sketch_rows import day_sketch_rows  # noqa: E402
from profile_store.audiences.sketch_table import (  # noqa: E402
    BUILT,
    SKETCH_TABLE,
    ensure_table,
)
from profile_store.audiences.sketch_writer import write_sketch_rows  # noqa: E402
from profile_store.hbase.settings import ThriftAddress  # noqa: E402
from profile_store.hbase_gateway.process import EmbeddedGateway  # noqa: E402

APP, EVENT = "ratings.app", "rate"
ATTRIBUTES = {"rating": 10, "genre": 12, "decade": 8, "device": 4, "country": 6}
START = date(2026, 1, 1)


def day_events(spark, day_index: int, events: int, users: int, seed: int):
    """One day's events; values skewed (squared uniform draws), users from a fixed pool."""
    day_seed = seed * 1000 + day_index
    frame = spark.range(events, numPartitions=4).select(
        F.lit(APP).alias("app_id"),
        F.lit(EVENT).alias("event_type"),
        F.concat(
            F.lit("u"), (F.pow(F.rand(day_seed), 1.5) * users).cast("long").cast("string")
        ).alias("user_id"),
        F.create_map(
            *[
                part
                for offset, (name, size) in enumerate(ATTRIBUTES.items())
                for part in (
                    F.lit(name),
                    (F.pow(F.rand(day_seed + 100 * (offset + 1)), 2) * size)
                    .cast("int")
                    .cast("string"),
                )
            ]
        ).alias("event_attributes"),
    )
    return frame


def build(spark, gateway: EmbeddedGateway, days: list[date], events: int, users: int, seed: int):
    address = ThriftAddress(gateway.host, gateway.port)
    rule = TrimRule()
    kinds: Counter = Counter()
    started = time.perf_counter()
    for index, day in enumerate(days):
        frame = day_events(spark, index, events, users, seed).localCheckpoint(eager=True)
        stats = daily_attribute_stats(frame).withColumn("date", F.lit(day.isoformat()))
        decisions = trim_decisions(stats, rule, days_in_window=1)
        rows = day_sketch_rows(frame, decisions, day_component(day)).localCheckpoint(eager=True)
        kinds.update({r.row_kind: r["count"] for r in rows.groupBy("row_kind").count().collect()})
        write_sketch_rows(rows, address, SKETCH_TABLE)
        if index % 10 == 9 or index == len(days) - 1:
            print(f"  built {index + 1}/{len(days)} days", flush=True)
    connection = happybase.Connection(host=gateway.host, port=gateway.port)
    for day in days:
        connection.table(SKETCH_TABLE).put(built_day_rowkey(day), {BUILT: b"1"})
    connection.close()
    return kinds, time.perf_counter() - started


def leaf(rng: random.Random, names: list[str], days: list[date]) -> dict:
    return {
        "app_id": APP,
        "event_type": EVENT,
        "date_from": days[0].isoformat(),
        "date_to": days[-1].isoformat(),
        "attributes": {name: str(rng.randrange(ATTRIBUTES[name] // 2)) for name in names},
    }


def queries(kind: str, count: int, days: list[date], seed: int) -> list[dict]:
    family = "two attributes" if kind.startswith("two attributes") else kind
    rng = random.Random(f"{seed}-{family}")  # both paths of two attributes: the same leaves
    names = sorted(ATTRIBUTES)
    trees = []
    for _ in range(count):
        if kind == "one attribute":
            trees.append(leaf(rng, rng.sample(names, 1), days))
        elif kind == "three attributes":
            trees.append(leaf(rng, rng.sample(names, 3), days))
        elif kind.startswith("two attributes"):
            trees.append(leaf(rng, rng.sample(names, 2), days))
        else:  # trees
            operator = rng.choice(("intersection", "difference"))
            two, one = leaf(rng, rng.sample(names, 2), days), leaf(rng, rng.sample(names, 1), days)
            trees.append({operator: [two, one]})
    return trees


def timed(engine: AudienceEngine, trees: list[dict]) -> tuple[np.ndarray, list]:
    latencies, answers = [], []
    for tree in trees:
        started = time.perf_counter()
        answers.append(engine.estimate(tree))
        latencies.append((time.perf_counter() - started) * 1000)
    return np.array(latencies), answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=50)
    parser.add_argument("--events-per-day", type=int, default=60_000)
    parser.add_argument("--users", type=int, default=40_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--scan-queries", type=int, default=20, help="queries of the kinds that scan (slow)"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    days = [START + timedelta(days=i) for i in range(args.days)]
    spark = spark_session()
    with tempfile.TemporaryDirectory(prefix="bench-multi-") as tmp, EmbeddedGateway(tmp) as gw:
        connection = happybase.Connection(host=gw.host, port=gw.port)
        ensure_table(connection, SKETCH_TABLE)
        connection.close()
        print(f"building {args.days} days x {args.events_per_day:,} events ...", flush=True)
        kinds, seconds = build(spark, gw, days, args.events_per_day, args.users, args.seed)
        pool = happybase.ConnectionPool(1, host=gw.host, port=gw.port)

        @contextlib.contextmanager
        def open_table():
            with pool.connection() as conn:
                yield conn.table(SKETCH_TABLE)

        engines = {
            True: AudienceEngine(open_table),
            False: AudienceEngine(open_table, read_pair_rows=False),
        }
        print(f"machine: {machine()}")
        per_day = ", ".join(f"{k} {v / args.days:,.0f}" for k, v in sorted(kinds.items()))
        print(f"build: {seconds:.0f} s; rows per day by kind: {per_day}")
        print()
        print(f"| leaves over {args.days} days | queries | rows read | p50 ms | p99 ms | bar |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
        answers = {}
        for kind, pair_rows, bar in (
            ("one attribute", True, ""),
            ("two attributes, pair rows", True, "p99 <= 50"),
            ("trees: two-attribute leaf AND / AND NOT one-attribute leaf", True, "p99 <= 50"),
            ("two attributes, scan (before)", False, ""),
            ("three attributes (scan)", True, ""),
        ):
            scans = "scan" in kind
            trees = queries(kind, args.scan_queries if scans else args.queries, days, args.seed)
            timed(engines[pair_rows], trees[:3])  # warm-up
            latencies, answers[kind] = timed(engines[pair_rows], trees)
            p50, p99 = np.percentile(latencies, [50, 99])
            rows = np.mean([a.rows_read for a in answers[kind]])
            print(
                f"| {kind} | {len(trees)} | {rows:,.0f} | {p50:.1f} | {p99:.1f} | {bar} |",
                flush=True,
            )
        two = "two attributes"
        compare_paths(answers[f"{two}, pair rows"], answers[f"{two}, scan (before)"])


def compare_paths(pairs: list, scans: list) -> None:
    """Both paths estimate the same set: equal in exact mode, within each other's 95% bounds
    otherwise (a pair row's sketch is a union capped at the build's lg_k, the scan unions the
    combinations' sketches at the query's larger union size)."""
    exact = [(p, s) for p, s in zip(pairs, scans, strict=False) if p.exact and s.exact]
    equal = sum(p.estimate == s.estimate for p, s in exact)
    estimated = [(p, s) for p, s in zip(pairs, scans, strict=False) if not (p.exact and s.exact)]
    within = sum(p.lower_95 <= s.estimate <= p.upper_95 for p, s in estimated)
    differences = [abs(p.estimate - s.estimate) / max(s.estimate, 1) for p, s in estimated]
    largest = f"{max(differences):.2%}" if differences else "n/a"
    print(
        f"\ntwo attributes, both paths: {equal}/{len(exact)} exact-mode answers equal; "
        f"{within}/{len(estimated)} estimates of the scan inside the pair rows' 95% bounds "
        f"(largest difference {largest})"
    )


if __name__ == "__main__":
    main()
