"""Identity components: Spark (local scipy contraction) against scipy, and incremental vs full.

(a) ``--part scipy``: a generated identity graph (numpy, fixed seed: millions of components of
    2-5 profiles, a few large ones, one long chain) written as Parquet; Spark's
    ``connected_components`` and ``scipy.sparse.csgraph.connected_components`` run on the same
    edges; the partitions must be identical (asserted), the time ratio is reported.
(b) ``--part incremental``: 30 days of identity edges in the lake layout; the state after day
    29 is built once, then day 30 is applied incrementally and, separately, recomputed in full
    over all 30 days; the assignments must be identical (asserted), the time ratio is reported.

Run: ``.venv/bin/python bench/identity_components.py`` (both parts; ``--edges`` and
``--day-edges`` to scale). Set ``SPARK_DRIVER_MEMORY`` (default here 12g) for big graphs.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

SEED = 11
START = date(2026, 11, 1)
DAYS = 30


def _machine() -> str:
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{os.cpu_count()} cores, {memory:.0f} GiB, {platform.system()} {platform.machine()}"


def identity_graph(target_edges: int, seed: int) -> tuple[np.ndarray, np.ndarray, int, dict]:
    """Undirected edges (src, dst) over shuffled node ids, and the node count.

    Components: sizes 2-5 (most of them), four large ones (2%, 0.5%, 0.2%, 0.05% of the edge
    count in profiles, 200k .. 5k at 10M edges: shared households, heavy cross-device users)
    and a chain of 0.2% (20k nodes at 10M: the worst case for label propagation). Each
    component is a random recursive tree plus 25% extra internal edges.
    """
    rng = np.random.default_rng(seed)
    large = (target_edges * np.array([0.02, 0.005, 0.002, 0.0005])).astype(np.int64)
    chain_length = int(target_edges * 0.002)
    per_small = 1.25 * (np.array([2, 3, 4, 5]) - 1) @ np.array([0.45, 0.3, 0.15, 0.1])
    small_count = int((target_edges - 1.25 * large.sum() - chain_length) / per_small)
    small = rng.choice([2, 3, 4, 5], size=small_count, p=[0.45, 0.3, 0.15, 0.1])
    sizes = np.concatenate([small, large])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    n_tree = int(sizes.sum())
    component = np.repeat(np.arange(len(sizes)), sizes)
    local = np.arange(n_tree) - starts[component]
    child = np.flatnonzero(local > 0)
    parent = starts[component[child]] + (rng.random(len(child)) * local[child]).astype(np.int64)
    extra_n = int(0.25 * len(child))
    extra_comp = component[child[rng.integers(0, len(child), extra_n)]]
    extra_a = starts[extra_comp] + (rng.random(extra_n) * sizes[extra_comp]).astype(np.int64)
    extra_b = starts[extra_comp] + (rng.random(extra_n) * sizes[extra_comp]).astype(np.int64)
    chain = n_tree + np.arange(chain_length, dtype=np.int64)
    src = np.concatenate([child, extra_a, chain[1:]])
    dst = np.concatenate([parent, extra_b, chain[:-1]])
    n_nodes = n_tree + len(chain)
    relabel = rng.permutation(n_nodes).astype(np.int64)
    order = rng.permutation(len(src))
    shape = {
        "components": len(sizes) + 1,
        "small_components": small_count,
        "largest": int(large.max()),
        "chain": len(chain),
    }
    return relabel[src[order]], relabel[dst[order]], n_nodes, shape


def spark_session():
    from pyspark.sql import SparkSession

    from profile_store.spark.session import spark_config_from_env

    os.environ.setdefault("SPARK_DRIVER_MEMORY", "12g")
    # Local Python workers (the components run numpy/scipy in mapInArrow) need this venv.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder
    for key, value in spark_config_from_env().items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def bench_scipy(spark, work: Path, target_edges: int) -> dict:
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components as scipy_components

    from profile_store.identity.components import connected_components

    started = time.perf_counter()
    src, dst, n_nodes, shape = identity_graph(target_edges, SEED)
    edges_path = work / "edges.parquet"
    pq.write_table(pa.table({"src": src, "dst": dst}), edges_path, row_group_size=1 << 20)
    generate_s = time.perf_counter() - started
    del src, dst

    started = time.perf_counter()
    table = pq.read_table(edges_path)
    a, b = table["src"].to_numpy(), table["dst"].to_numpy()
    matrix = coo_matrix((np.ones(len(a), dtype=np.int8), (a, b)), shape=(n_nodes, n_nodes))
    n_components, scipy_labels = scipy_components(matrix.tocsr(), directed=False)
    scipy_s = time.perf_counter() - started
    del matrix

    labels_path = work / "spark_labels"
    started = time.perf_counter()
    run = connected_components(spark.read.parquet(str(edges_path)))
    run.labels.write.mode("overwrite").parquet(str(labels_path))
    spark_s = time.perf_counter() - started

    # Identical partitions: Spark labels every node of an edge with its component's smallest
    # id; the same canonical label from scipy's arbitrary component numbers.
    smallest = np.full(n_components, np.iinfo(np.int64).max)
    np.minimum.at(smallest, scipy_labels, np.arange(n_nodes, dtype=np.int64))
    labelled = pq.read_table(labels_path)
    node = labelled["node"].to_numpy()
    spark_component = labelled["component"].to_numpy()
    in_edges = np.zeros(n_nodes, dtype=bool)
    in_edges[a] = True
    in_edges[b] = True
    assert len(node) == int(in_edges.sum()) == len(np.unique(node)), "every edge node, once"
    assert np.array_equal(spark_component, smallest[scipy_labels[node]]), "partitions differ"
    return {
        "edges": len(a),
        "nodes": int(in_edges.sum()),
        "components": shape["components"],
        "largest": shape["largest"],
        "chain": shape["chain"],
        "generate_s": generate_s,
        "scipy_s": scipy_s,
        "spark_s": spark_s,
        "iterations": run.iterations,
    }


def _write_day_tables(root: Path, day: date, a, b, keys, profiles, first_seen) -> None:
    stamp = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
    ts = pa.array(np.full(len(a), np.datetime64(stamp.replace(tzinfo=None), "us")))
    ts = ts.cast(pa.timestamp("us", tz="UTC"))
    edge_dir = root / "identity_edges" / f"date={day.isoformat()}"
    edge_dir.mkdir(parents=True)
    pq.write_table(
        pa.table(
            {
                "profile_a": pa.array(a),
                "profile_b": pa.array(b),
                "rule": pa.array(["member_id"] * len(a)),
                "key_type": pa.array(["member_id"] * len(a)),
                "key": pa.array(keys),
                "weight": pa.array(np.ones(len(a))),
                "first_seen": ts,
                "last_seen": ts,
            }
        ),
        edge_dir / "part-0.parquet",
    )
    profile_dir = root / "identity_profiles" / f"date={day.isoformat()}"
    profile_dir.mkdir(parents=True)
    seen = pa.array(first_seen.astype("datetime64[us]")).cast(pa.timestamp("us", tz="UTC"))
    pq.write_table(
        pa.table(
            {
                "profile": pa.array(profiles),
                "id_type": pa.array(["gaid"] * len(profiles)),
                "first_seen": seen,
                "last_seen": seen,
                "events": pa.array(np.ones(len(profiles), dtype=np.int64)),
            }
        ),
        profile_dir / "part-0.parquet",
    )


def thirty_day_lake(root: Path, day_edges: int, seed: int) -> dict:
    """30 days of star edges: persons' devices join over time, a third of a day's edges repeat.

    Each person has 2-6 devices whose first days are spread over the 30 days; a device's edge
    to the person's first device appears on its first day and again on later days (re-logins).
    """
    rng = np.random.default_rng(seed)
    persons = int(day_edges * DAYS / 2.6 / 1.5)
    devices = rng.choice([2, 3, 4, 5, 6], size=persons, p=[0.35, 0.3, 0.2, 0.1, 0.05])
    person = np.repeat(np.arange(persons), devices)
    starts = np.concatenate([[0], np.cumsum(devices)[:-1]])
    local = np.arange(len(person)) - starts[person]
    person_day = rng.integers(0, DAYS, persons)
    # A device joins some days after its person's first one; past day 30 it is not seen at all.
    device_day = person_day[person] + rng.geometric(0.15, len(person)) - 1
    device_day[local == 0] = person_day[person[local == 0]]
    device_day = np.maximum(device_day, person_day[person])
    hub = starts[person]
    names = np.char.add("p", np.arange(len(person)).astype(str)).astype(object)
    day_of = np.arange(DAYS)
    edges_total = 0
    for day_index in day_of:
        day = START + timedelta(days=int(day_index))
        new = np.flatnonzero((local > 0) & (device_day == day_index))
        old = np.flatnonzero((local > 0) & (device_day < day_index))
        repeat = old[rng.random(len(old)) < 0.5 * len(new) / max(len(old), 1)]
        chosen = np.concatenate([new, repeat])
        a = names[np.minimum(hub[chosen], chosen)]
        b = names[np.maximum(hub[chosen], chosen)]
        a, b = np.where(a < b, a, b), np.where(a < b, b, a)
        keys = np.char.add("m", person[chosen].astype(str))
        fresh = np.flatnonzero(device_day == day_index)
        seconds = rng.integers(0, 86_400, len(fresh))
        first = np.datetime64(day.isoformat()) + seconds.astype("timedelta64[s]")
        _write_day_tables(root, day, a, b, keys, names[fresh], first)
        edges_total += len(chosen)
    return {"persons": persons, "profiles": int((device_day < DAYS).sum()), "edges": edges_total}


def bench_incremental(spark, work: Path, day_edges: int) -> dict:
    from profile_store.identity.pipeline import update_components
    from profile_store.lake.layout import IDENTITY_COMPONENTS, day_dir
    from profile_store.lake.storage import LocalLakeStorage

    root = work / "lake"
    shape = thirty_day_lake(root, day_edges, SEED)
    storage = LocalLakeStorage(root)
    last = START + timedelta(days=DAYS - 1)
    update_components(spark, storage, last - timedelta(days=1), full_recompute=True)

    started = time.perf_counter()
    incremental = update_components(spark, storage, last)
    incremental_s = time.perf_counter() - started
    incremental_dir = root / "incremental_result"
    (root / day_dir(IDENTITY_COMPONENTS, last)).rename(incremental_dir)

    started = time.perf_counter()
    full = update_components(spark, storage, last, full_recompute=True)
    full_s = time.perf_counter() - started

    columns = ["profile", "master", "first_seen", "size"]
    left = pq.read_table(incremental_dir).select(columns).sort_by("profile")
    right = pq.read_table(root / day_dir(IDENTITY_COMPONENTS, last)).select(columns)
    right = right.sort_by("profile")
    for column in columns:
        assert left[column].equals(right[column]), f"incremental and full differ on {column}"
    return {
        **shape,
        "last_day_edges": incremental.change.edges_recomputed,
        "touched": incremental.change.profiles_touched,
        "linked": full.summary.linked_profiles,
        "incremental_s": incremental_s,
        "full_s": full_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", choices=("scipy", "incremental", "both"), default="both")
    parser.add_argument("--edges", type=int, default=10_000_000, help="(a) graph edges")
    parser.add_argument("--day-edges", type=int, default=500_000, help="(b) edges per day")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    logging.getLogger("profile_store.identity.components").setLevel(logging.INFO)
    spark = spark_session()
    conf = spark.sparkContext.getConf()
    print(
        f"machine: {_machine()}; Spark {spark.version} {conf.get('spark.master')}, "
        f"driver memory {conf.get('spark.driver.memory')}, shuffle partitions "
        f"{conf.get('spark.sql.shuffle.partitions')}; seed {SEED}"
    )
    with tempfile.TemporaryDirectory() as directory:
        work = Path(directory)
        if args.part in ("scipy", "both"):
            r = bench_scipy(spark, work, args.edges)
            print("\n(a) connected components, same edges, identical partitions (asserted)")
            print("| edges | nodes | components | largest | chain | scipy s | Spark s | rounds |")
            print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            print(
                f"| {r['edges']:,} | {r['nodes']:,} | {r['components']:,} | {r['largest']:,} "
                f"| {r['chain']:,} | {r['scipy_s']:.1f} | {r['spark_s']:.1f} "
                f"| {r['iterations']} |"
            )
            print(f"Spark / scipy: {r['spark_s'] / r['scipy_s']:.1f}x (bar: <= 10x)")
        if args.part in ("incremental", "both"):
            r = bench_incremental(spark, work, args.day_edges)
            print("\n(b) day 30: incremental vs full recompute, identical assignments (asserted)")
            print(
                "| profiles | edges (30 days) | linked | day-30 recomputed edges | touched "
                "| incremental s | full s |"
            )
            print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
            print(
                f"| {r['profiles']:,} | {r['edges']:,} | {r['linked']:,} "
                f"| {r['last_day_edges']:,} | {r['touched']:,} | {r['incremental_s']:.1f} "
                f"| {r['full_s']:.1f} |"
            )
            print(f"incremental / full: {r['incremental_s'] / r['full_s']:.2f}x (bar: <= 0.3x)")
    spark.stop()


if __name__ == "__main__":
    main()
