"""Audience benchmark: sketch build vs DuckDB exact, query latency, and accuracy.

Fixed seeds. Builds a generated lake (default 30 days x 350,000 events = 10.5M events), runs
the same per-day pipeline the Dagster assets run (ingest, attribute stats, trimming, sketch
rows, HBase writes to the embedded gateway), then:

1. build: events/s of the Spark sketch build (sketch rows of a day, fully computed) against
   DuckDB's exact COUNT(DISTINCT user_id) over the same Parquet files grouped the same way
   (app, event type, day, kept-attribute combination, plus the per-day aggregate); for
   reference, Spark's own exact count of that grouping and Spark only reading the columns;
2. query: p50/p90/p99 latency of >= 1,000 generated queries against the gateway;
3. accuracy: the asset check's figures over the same queries (exact answers from Spark);
   then the audience builder's calls over HTTP: the catalog, attributes and the live count;
4. with ``--against-apache``: the sketch table copied into a standalone Apache HBase
   (``profile_store/launchers/apache_hbase.py``), the same queries answered from both, answers
   compared and latencies printed side by side.

    .venv/bin/python bench/audiences.py [--days 30] [--events-per-day 350000] [--queries 1000]
        [--against-apache]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from datetime import date, timedelta
from pathlib import Path

import duckdb
import happybase
import numpy as np
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from profile_store.audiences.accuracy import AccuracyBars
from profile_store.audiences.accuracy_run import run_accuracy
from profile_store.audiences.attribute_stats import TrimRule, daily_attribute_stats, trim_decisions
from profile_store.audiences.built_days import built_day_cells
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.query_sampler import sample_queries
from profile_store.audiences.rowkey import day_component
from profile_store.audiences.saved import AUDIENCE_TABLE, SavedAudiences
from profile_store.audiences.saved import ensure_table as ensure_audience_table
from profile_store.audiences.sketch_rows import (
    DEFAULT_LG_K,
    day_sketch_rows,
    kept_attribute_lists,
    kept_combination,
)
from profile_store.audiences.sketch_table import SKETCH_TABLE, ensure_table, sketch_table_opener
from profile_store.audiences.sketch_writer import write_sketch_rows
from profile_store.audiences.window_counts import CountedWindow
from profile_store.audiences.window_inputs import window_inputs
from profile_store.events.ingest import ingest_day
from profile_store.generator import generate_lake
from profile_store.hbase.pool import table_opener
from profile_store.hbase.settings import ThriftAddress
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.layout import ATTRIBUTE_STATS, TRIMMED_ATTRIBUTES, day_dir, events_day
from profile_store.lake.storage import LocalLakeStorage
from profile_store.service.tenants import Tenants
from profile_store.spark.session import local_spark_config

START = date(2026, 10, 1)
BENCH_KEY = "bench-key-0123456789abcdef"


def spark_session() -> SparkSession:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("bench-audiences")
    for key, value in local_spark_config(shuffle_partitions=4).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


DUCKDB_GROUPING = """
WITH kept AS (
    SELECT app_id, event_type,
           coalesce(list(attribute) FILTER (WHERE kept), []) AS names
    FROM read_parquet('{decisions}') GROUP BY ALL
),
rows AS (
    SELECT e.app_id, e.event_type, e.user_id,
           list_sort(list_filter(map_entries(e.event_attributes),
                                 lambda x: list_contains(k.names, x.key))) AS combination
    FROM read_parquet('{events}') e JOIN kept k USING (app_id, event_type)
)
SELECT app_id, event_type, combination, count(DISTINCT user_id) AS users
FROM rows GROUP BY GROUPING SETS ((app_id, event_type, combination), (app_id, event_type))
"""


def spark_exact(events, decisions) -> None:
    """Spark's own exact COUNT(DISTINCT user_id) grouped as DuckDB groups: the engine's floor."""
    with_kept = events.join(F.broadcast(kept_attribute_lists(decisions)), ["app_id", "event_type"])
    rows = with_kept.select("app_id", "event_type", "user_id", kept_combination().alias("c"))
    sets = [["app_id", "event_type", "c"], ["app_id", "event_type"]]
    exact = rows.groupingSets(sets, "app_id", "event_type", "c").agg(F.count_distinct("user_id"))
    exact.write.format("noop").mode("overwrite").save()


def spark_scan(events) -> None:
    """Spark reading the columns the build needs and nothing else: the floor under any build."""
    events.select("app_id", "event_type", "user_id", "event_attributes").write.format("noop").mode(
        "overwrite"
    ).save()


FAMILY_OPTIONS = (
    "max_versions",
    "compression",
    "in_memory",
    "bloom_filter_type",
    "bloom_filter_vector_size",
    "bloom_filter_nb_hashes",
    "block_cache_enabled",
    "time_to_live",
)


def copy_table(source: happybase.Connection, target: happybase.Connection, name: str) -> int:
    """``name`` with its families and every row's latest cells, from ``source`` to ``target``."""
    families = {
        family.decode(): {k: v for k, v in options.items() if k in FAMILY_OPTIONS}
        for family, options in source.table(name).families().items()
    }
    target.create_table(name, families)
    rows = 0
    with target.table(name).batch(batch_size=500) as batch:
        for key, cells in source.table(name).scan(batch_size=2000):
            batch.put(key, cells)
            rows += 1
    return rows


def timed_answers(engine: AudienceEngine, trees: list[dict]) -> tuple[list, list[float]]:
    answers = [engine.estimate(tree) for tree in trees]
    return [(a.estimate, a.lower_95, a.upper_95) for a in answers], [a.elapsed_ms for a in answers]


def against_apache(host: str, port: int, trees: list[dict]) -> dict:
    """The gateway's sketch table copied into a standalone Apache HBase; ``trees`` answered
    from both (each engine warmed by one pass first), answers compared."""
    from profile_store.hbase.pool import table_opener
    from profile_store.launchers.apache_hbase import temporary_hbase

    with temporary_hbase() as hbase:
        source = happybase.Connection(host=host, port=port)
        target = happybase.Connection(**hbase.connection_kwargs())
        rows = copy_table(source, target, SKETCH_TABLE)
        print(f"copied {rows:,} sketch rows into Apache HBase", flush=True)
        results: dict = {}
        answers = {}
        for server, kwargs in (("gateway", {"host": host, "port": port}),
                               ("apache", hbase.connection_kwargs())):  # fmt: skip
            pool = happybase.ConnectionPool(2, **kwargs)
            engine = AudienceEngine(table_opener(pool, SKETCH_TABLE), min_retained_for_estimate=0)
            timed_answers(engine, trees)  # warm-up pass
            answers[server], results[server] = timed_answers(engine, trees)
        results["identical"] = answers["gateway"] == answers["apache"]
    return results


def mark_built(address: ThriftAddress, day: date, rows) -> None:
    """The day's built-day marker with its (app, event type) pairs, which discovery reads."""
    pairs = sorted(
        {(r.app_id, r.event_type) for r in rows.select("app_id", "event_type").distinct().collect()}
    )
    connection = happybase.Connection(host=address.host, port=address.port)
    try:
        connection.table(SKETCH_TABLE).put(*built_day_cells(day, pairs))
    finally:
        connection.close()


def builder_latencies(pool: happybase.ConnectionPool, trees: list[dict]) -> dict:
    """Latencies (ms) of the builder page's calls: the catalog, each event type's attributes,
    and the live count of every sampled query, each as an HTTP request to the service."""
    from fastapi.testclient import TestClient

    from profile_store.service.app import create_app

    with pool.connection() as connection:
        ensure_audience_table(connection)
    tenants = Tenants.from_config(
        {"tenants": [{"name": "bench", "api_keys": [BENCH_KEY], "app_id_prefixes": ["com."]}]}
    )
    app = create_app(
        AudienceEngine(sketch_table_opener(pool)),
        tenants,
        saved=SavedAudiences(table_opener(pool, AUDIENCE_TABLE)),
    )
    headers = {"X-API-Key": BENCH_KEY}
    timings: dict[str, list[float]] = {"catalog": [], "attributes": [], "live count": []}
    with TestClient(app) as client:

        def timed(label: str, method: str, path: str, body=None) -> dict:
            started = time.perf_counter()
            response = client.request(method, path, json=body, headers=headers)
            timings[label].append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200, response.text
            return response.json()

        for _ in range(3):  # warm-up
            catalog = timed("catalog", "GET", "/v1/discovery/apps")
        timings["catalog"].clear()
        pairs = [(a["app_id"], e["event_type"]) for a in catalog["apps"] for e in a["event_types"]]
        for i in range(max(200, len(pairs))):
            timed("catalog", "GET", "/v1/discovery/apps")
            app_id, event_type = pairs[i % len(pairs)]
            path = f"/v1/discovery/apps/{app_id}/event-types/{event_type}/attributes"
            timed("attributes", "GET", path)
        for tree in trees:
            started = time.perf_counter()
            client.post("/v1/audiences/estimate", json=tree, headers=headers)
            timings["live count"].append((time.perf_counter() - started) * 1000)
    bars = {"catalog": "20", "attributes": "20", "live count": "50"}
    return {label: (values, bars[label]) for label, values in timings.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--events-per-day", type=int, default=350_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--lg-k", type=int, default=DEFAULT_LG_K, help="sketch size (log2 of k) of the build"
    )
    parser.add_argument("--work-dir", type=Path, default=Path("data/bench-audiences"))
    parser.add_argument(
        "--against-apache",
        action="store_true",
        help="also answer the queries from a standalone Apache HBase holding the same rows",
    )
    args = parser.parse_args()

    lake_root = args.work_dir / "lake"
    days = [START + timedelta(days=i) for i in range(args.days)]
    if not (lake_root / "landing" / f"date={days[-1]}" / "_SUCCESS").exists():
        print(f"generating {args.days} x {args.events_per_day:,} events ...", flush=True)
        generate_lake(lake_root, args.days, args.events_per_day, args.seed, START)

    spark = spark_session()
    storage = LocalLakeStorage(lake_root)
    rule = TrimRule()
    build = {"events": 0, "rows": 0, "spark_s": 0.0, "spark_write_s": 0.0, "duckdb_s": 0.0}
    build |= {"spark_exact_s": 0.0, "spark_scan_s": 0.0}
    duck = duckdb.connect()
    duck.execute("SET threads TO 2")
    with EmbeddedGateway(args.work_dir / "hbase") as gateway:
        host, port = gateway.host, gateway.port
        connection = happybase.Connection(host=host, port=port)
        if SKETCH_TABLE.encode() in connection.tables():
            connection.delete_table(SKETCH_TABLE, disable=True)
        ensure_table(connection, SKETCH_TABLE)
        connection.close()
        address = ThriftAddress(host, port)
        for day in days:
            summary = ingest_day(spark, storage, day)
            events = spark.read.parquet(storage.spark_uri(events_day(day)))
            stats_uri = storage.spark_uri(day_dir(ATTRIBUTE_STATS, day))
            daily_attribute_stats(events).coalesce(1).write.mode("overwrite").parquet(stats_uri)
            window = [
                d for d in (day - timedelta(days=i) for i in range(rule.window_days)) if d >= START
            ]
            stats = None
            for d in window:
                part = spark.read.parquet(storage.spark_uri(day_dir(ATTRIBUTE_STATS, d)))
                part = part.withColumn("date", F.lit(d.isoformat()))
                stats = part if stats is None else stats.unionByName(part)
            decisions_uri = storage.spark_uri(day_dir(TRIMMED_ATTRIBUTES, day))
            trim_decisions(stats, rule, len(window)).coalesce(1).write.mode("overwrite").parquet(
                decisions_uri
            )
            decisions = spark.read.parquet(decisions_uri)

            t0 = time.perf_counter()
            rows = day_sketch_rows(events, decisions, day_component(day), args.lg_k)
            rows.write.format("noop").mode("overwrite").save()
            build["spark_s"] += time.perf_counter() - t0

            t0 = time.perf_counter()
            build["rows"] += write_sketch_rows(rows, address, SKETCH_TABLE)
            build["spark_write_s"] += time.perf_counter() - t0
            mark_built(address, day, rows)  # as audience_sketches does last (not timed)

            t0 = time.perf_counter()
            spark_exact(events, decisions)
            build["spark_exact_s"] += time.perf_counter() - t0

            t0 = time.perf_counter()
            spark_scan(events)
            build["spark_scan_s"] += time.perf_counter() - t0

            t0 = time.perf_counter()
            duck.execute(
                DUCKDB_GROUPING.format(
                    decisions=str(lake_root / day_dir(TRIMMED_ATTRIBUTES, day) / "*.parquet"),
                    events=str(lake_root / events_day(day) / "*.parquet"),
                )
            ).fetchall()
            build["duckdb_s"] += time.perf_counter() - t0
            build["events"] += summary.clean_rows
            print(f"  built {day}: {summary.clean_rows:,} events", flush=True)

        pool = happybase.ConnectionPool(2, host=host, port=port)

        @contextlib.contextmanager
        def open_table():
            with pool.connection() as conn:
                yield conn.table(SKETCH_TABLE)

        engine = AudienceEngine(open_table, min_retained_for_estimate=0)
        events, decisions = window_inputs(spark, storage, days)
        exact = CountedWindow(spark, storage, days, events)
        run = run_accuracy(exact, decisions, engine, days, args.queries, args.seed)
        trees = sample_queries(exact.catalog(decisions), days, args.queries, args.seed)
        builder = builder_latencies(pool, trees)
        side_by_side = None
        if args.against_apache:
            side_by_side = against_apache(host, port, trees)

    report = run.report
    lat = run.latencies_ms
    spark_rate = build["events"] / build["spark_s"]
    duck_rate = build["events"] / build["duckdb_s"]
    print()
    print(f"lake: {args.days} days, {build['events']:,} clean events, {build['rows']:,} rows")
    print("| build | seconds | events/s |")
    print("| --- | ---: | ---: |")
    print(f"| Spark sketch rows (theta + tuple) | {build['spark_s']:.1f} | {spark_rate:,.0f} |")
    print(
        f"| same + HBase writes | {build['spark_s'] + build['spark_write_s']:.1f} | "
        f"{build['events'] / (build['spark_s'] + build['spark_write_s']):,.0f} |"
    )
    spark_exact_rate = build["events"] / build["spark_exact_s"]
    print(
        f"| Spark exact COUNT(DISTINCT), same grouping | {build['spark_exact_s']:.1f} | "
        f"{spark_exact_rate:,.0f} |"
    )
    spark_scan_rate = build["events"] / build["spark_scan_s"]
    print(
        f"| Spark scan of the build's columns only | {build['spark_scan_s']:.1f} | "
        f"{spark_scan_rate:,.0f} |"
    )
    print(f"| DuckDB exact COUNT(DISTINCT) | {build['duckdb_s']:.1f} | {duck_rate:,.0f} |")
    print(f"ratio Spark sketch / DuckDB exact: {spark_rate / duck_rate:.2f}x (bar >= 0.8x)")
    print(f"ratio Spark exact / DuckDB exact: {spark_exact_rate / duck_rate:.2f}x (reference)")
    print(f"ratio Spark scan only / DuckDB exact: {spark_scan_rate / duck_rate:.2f}x (reference)")
    print()
    print("| queries | p50 ms | p90 ms | p99 ms |")
    print("| ---: | ---: | ---: | ---: |")
    p50, p90, p99 = np.percentile(lat, [50, 90, 99])
    print(f"| {len(lat)} | {p50:.2f} | {p90:.2f} | {p99:.2f} |  (bar p50 <= 10, p99 <= 50)")
    print()
    # What the check judges: errors relative to the answer (the answers of at least 100 users
    # and half their operand; exact-mode ones all) and relative to the operand (all).
    print(
        "| answers | queries | judged to the answer | mean error | < 1% | < 10% "
        "| mean error (operand) | < 1% (operand) | < 10% (operand) | 95% bounds hold |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, mode in (
        ("estimation mode", report.estimation_mode),
        ("exact mode", report.exact_mode),
        ("all", report.overall),
    ):
        if mode is None:
            continue
        to_answer, to_operand = mode.to_answer, mode.to_operand
        answer_cells = (
            f"{to_answer.mean:.2%} | {to_answer.share_under_1pct:.1%} | "
            f"{to_answer.share_under_10pct:.1%}"
            if to_answer
            else "- | - | -"
        )
        print(
            f"| {label} | {mode.answers} | {mode.judged_to_answer} | {answer_cells} | "
            f"{to_operand.mean:.2%} | {to_operand.share_under_1pct:.1%} | "
            f"{to_operand.share_under_10pct:.1%} | {mode.bounds_coverage:.1%} |"
        )
    failures = report.failures(AccuracyBars())
    print("accuracy bars: " + ("all met" if not failures else "; ".join(failures)))
    print()
    print("Audience builder calls over HTTP (FastAPI app in process, same gateway)")
    print("| call | requests | p50 ms | p99 ms | bar p99 |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for label, (latencies, bar) in builder.items():
        q50, q99 = np.percentile(latencies, [50, 99])
        print(f"| {label} | {len(latencies)} | {q50:.2f} | {q99:.2f} | {bar} |")
    if side_by_side is not None:
        print()
        print(f"Same {len(lat)} queries, the sketch table on both (answers identical: "
              f"{side_by_side['identical']})")  # fmt: skip
        print("| server | p50 ms | p90 ms | p99 ms |")
        print("| --- | ---: | ---: | ---: |")
        for server in ("gateway", "apache"):
            q50, q90, q99 = np.percentile(side_by_side[server], [50, 90, 99])
            print(f"| {server} | {q50:.2f} | {q90:.2f} | {q99:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
