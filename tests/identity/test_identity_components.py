"""Connected components (local scipy contraction in Spark), masters, and incremental updates."""

from __future__ import annotations

from collections import Counter
from datetime import date, datetime, timedelta

import numpy as np
import pytest
from pyspark.sql import functions as F
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components as scipy_components

from profile_store.identity import contraction
from profile_store.identity.components import connected_components, profile_components
from profile_store.identity.pipeline import EDGES_SCHEMA, update_components
from profile_store.lake.layout import (
    IDENTITY_EDGES,
    IDENTITY_PROFILES,
    IDENTITY_QUARANTINE,
    day_dir,
)
from profile_store.lake.storage import LocalLakeStorage

D1 = date(2026, 11, 1)


def test_components_equal_scipys_partition_on_a_random_graph(spark):
    rng = np.random.default_rng(3)
    nodes = 3000
    src, dst = rng.integers(0, nodes, 2600), rng.integers(0, nodes, 2600)
    run = connected_components(
        spark.createDataFrame(
            list(zip(src.tolist(), dst.tolist(), strict=True)), "src long, dst long"
        )
    )
    got = {r.node: r.component for r in run.labels.collect()}
    matrix = coo_matrix((np.ones(len(src)), (src, dst)), shape=(nodes, nodes))
    _, labels = scipy_components(matrix, directed=False)
    smallest = {}
    for node in range(nodes):
        smallest.setdefault(labels[node], node)
    linked = {int(n) for n, m in zip(src, dst, strict=True) if n != m}
    linked |= {int(m) for n, m in zip(src, dst, strict=True) if n != m}
    assert got == {node: smallest[labels[node]] for node in linked}


def test_a_long_chain_in_shuffled_order_is_one_component(spark):
    order = np.random.default_rng(5).permutation(400).tolist()
    chain = list(zip(order[:-1], order[1:], strict=True))
    run = connected_components(spark.createDataFrame(chain, "src long, dst long"))
    labels = run.labels.collect()
    assert len(labels) == 400 and {r.component for r in labels} == {0}


def scipy_answer(src: np.ndarray, dst: np.ndarray) -> tuple[dict[int, int], int]:
    """{node: smallest node of its component} for the ends of non-loop edges, and the number
    of distinct undirected non-loop edges, from scipy on the same edges."""
    keep = src != dst
    src, dst = src[keep], dst[keep]
    nodes, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    n = len(nodes)
    matrix = coo_matrix((np.ones(len(src)), (inverse[: len(src)], inverse[len(src) :])), (n, n))
    count, labels = scipy_components(matrix, directed=False)
    smallest = np.full(count, np.iinfo(np.int64).max)
    np.minimum.at(smallest, labels, nodes)
    distinct = len(
        {(max(a, b), min(a, b)) for a, b in zip(src.tolist(), dst.tolist(), strict=True)}
    )
    return dict(zip(nodes.tolist(), smallest[labels].tolist(), strict=True)), distinct


def stress_graph(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Shapes that stress a contraction, as separate components over shuffled ids: a chain of
    3,000, a star of 2,000 leaves (centre in the middle of the ids), a random tree of 1,500,
    800 small components of 2-5 nodes with repeated and reversed edges, and self-loops (one
    node has nothing else)."""
    rng = np.random.default_rng(seed)
    shapes: list[tuple[np.ndarray, np.ndarray]] = []
    start = 0

    def take(n: int) -> np.ndarray:
        nonlocal start
        start += n
        return np.arange(start - n, start)

    chain = take(3000)
    shapes.append((chain[:-1], chain[1:]))
    star = take(2001)
    shapes.append((np.full(2000, star[1000]), np.delete(star, 1000)))
    tree = take(1500)
    shapes.append((tree[1:], tree[(rng.random(1499) * np.arange(1, 1500)).astype(int)]))
    for size in rng.choice([2, 3, 4, 5], size=800):
        small = take(size)
        a = small[1:]
        b = small[(rng.random(size - 1) * np.arange(1, size)).astype(int)]
        shapes.append((np.concatenate([a, b[:1]]), np.concatenate([b, a[:1]])))  # + reversed
    loops = take(3)
    shapes.append((np.array([loops[0], loops[1], loops[1]]), np.array([loops[0], loops[1], 0])))
    src = np.concatenate([s for s, _ in shapes])
    dst = np.concatenate([d for _, d in shapes])
    ids = rng.permutation(start)
    order = rng.permutation(len(src))
    return ids[src[order]], ids[dst[order]]


def run_components(spark, src, dst, **options):
    frame = spark.createDataFrame(
        list(zip(src.tolist(), dst.tolist(), strict=True)), "src long, dst long"
    )
    run = connected_components(frame, **options)
    return {r.node: r.component for r in run.labels.collect()}, run


@pytest.mark.parametrize(
    "options, spread",
    [
        ({}, 1),
        # Narrow rounds and a tiny local limit: several distributed rounds before the last step.
        ({"partitions": 3, "local_edges": 200}, 1),
        # Ids far apart and negative: the sorted (not directly indexed) code paths.
        ({"partitions": 4, "local_edges": 200}, -(10**12) - 7),
        # No local step at all: rounds until no edge is left; one partition.
        ({"partitions": 1, "local_edges": 0}, 1),
        ({"partitions": 5, "local_edges": 0}, 1),
    ],
)
def test_components_equal_scipys_on_chain_star_tree_small_and_self_loops(spark, options, spread):
    src, dst = stress_graph()
    src, dst = src * spread, dst * spread
    got, run = run_components(spark, src, dst, **options)
    expected, distinct = scipy_answer(src, dst)
    assert got == expected
    assert run.edges == distinct
    if options.get("local_edges") == 200:
        assert run.iterations >= 3  # at least two distributed rounds and the local step


def test_an_empty_graph_and_self_loops_only_label_nothing(spark):
    got, run = run_components(spark, np.array([1, 2]), np.array([1, 2]))
    assert got == {} and run.edges == 0


def test_edges_with_a_null_end_are_ignored(spark):
    frame = spark.createDataFrame([(1, None), (None, 2), (3, 4)], "src long, dst long")
    labels = connected_components(frame).labels.collect()
    assert {(r.node, r.component) for r in labels} == {(3, 3), (4, 3)}


def test_rounds_are_bounded(spark):
    src, dst = stress_graph()
    with pytest.raises(RuntimeError, match="no convergence"):
        run_components(spark, src, dst, partitions=4, local_edges=0, max_iterations=1)


@pytest.mark.parametrize("partitions", [1, 2, 3, 8, 13])
def test_each_bucket_key_lands_in_its_own_spark_partition(spark, partitions):
    keys = contraction.partition_keys(partitions)
    frame = spark.createDataFrame([(key,) for key in keys], "bucket int")
    placed = frame.repartition(partitions, "bucket").select(
        "bucket", F.spark_partition_id().alias("partition")
    )
    assert {r.bucket: r.partition for r in placed.collect()} == {
        key: t for t, key in enumerate(keys)
    }
    assert contraction.spark_int_hash(0) == 933211791  # Spark's hash(0), hash(1)
    assert contraction.spark_int_hash(1) == -559580957


def test_dense_and_sorted_kernels_agree():
    rng = np.random.default_rng(1)
    x, y = rng.integers(0, 5000, 4000), rng.integers(0, 5000, 4000)
    x, y = np.maximum(x, y)[x != y], np.minimum(x, y)[x != y]
    far = 10**15  # the same graph with ids too sparse to index directly
    nodes, roots, distinct = contraction.local_components(x, y)
    far_nodes, far_roots, far_distinct = contraction.local_components(x * far, y * far)
    assert np.array_equal(nodes * far, far_nodes) and np.array_equal(roots * far, far_roots)
    assert distinct == far_distinct == len(set(zip(x.tolist(), y.tolist(), strict=True)))
    node, root = rng.integers(0, 3000, 6000), rng.integers(0, 3000, 6000)
    dense = contraction.smallest_root(node, root)
    sparse = contraction.smallest_root(node * far, root)
    assert np.array_equal(dense[0] * far, sparse[0])
    assert np.array_equal(dense[1], sparse[1]) and np.array_equal(dense[2], sparse[2])
    parent = rng.integers(0, 3000, 5000)
    known = np.unique(rng.integers(0, 3000, 1000))
    component = known // 7
    expected = np.where(np.isin(parent, known), parent // 7, parent)
    assert np.array_equal(contraction.resolve(parent, known, component), expected)
    assert np.array_equal(
        contraction.resolve(parent * far, known * far, component * far), expected * far
    )


def test_the_master_is_the_oldest_profile_with_ties_broken_by_id(spark):
    pairs = spark.createDataFrame(
        [("b", "c"), ("c", "d"), ("x", "y"), ("y", "z")], "profile_a string, profile_b string"
    )
    seen = [("b", 5), ("c", 2), ("d", 2), ("x", 1), ("y", 1), ("z", 1)]
    first_seen = spark.createDataFrame(
        [(p, datetime(2026, 11, 1, h)) for p, h in seen], "profile string, first_seen timestamp"
    )
    expected = {
        "b": ("c", 3),
        "c": ("c", 3),
        "d": ("c", 3),
        "x": ("x", 3),
        "y": ("x", 3),
        "z": ("x", 3),
    }
    for local_edges in (0, 100):  # distributed rounds, then one partition
        assignment, _ = profile_components(pairs, first_seen, local_edges=local_edges)
        assert {r.profile: (r.master, r.size) for r in assignment.collect()} == expected


def test_one_partition_and_distributed_rounds_give_the_same_assignment(spark):
    rng = np.random.default_rng(5)
    ids = [f"id{i:05d}" for i in range(3000)]
    ends = rng.integers(0, 3000, (2500, 2))
    pairs = spark.createDataFrame(
        [(ids[a], ids[b]) for a, b in ends] + [(ids[7], ids[7]), (None, ids[8])],
        "profile_a string, profile_b string",
    )
    hours = rng.integers(0, 5, 3000)  # many ties: the id decides
    first_seen = (
        spark.createDataFrame(
            [
                (ids[i], datetime(2026, 11, 1, int(h)) if i % 50 else None)
                for i, h in enumerate(hours)
            ]
            + [(ids[3], datetime(2026, 10, 1))],  # a second, earlier row: the earliest counts
            "profile string, first_seen timestamp",
        )
        .groupBy("profile")
        .agg(F.min("first_seen").alias("first_seen"))
    )
    local, local_run = profile_components(pairs, first_seen)
    rounds, rounds_run = profile_components(pairs, first_seen, local_edges=0)
    assert local_run.edges == rounds_run.edges > 0
    assert local_run.labels is None and rounds_run.labels is not None
    assert sorted(local.collect()) == sorted(rounds.collect())


class Lake:
    """Identity tables written straight into a lake directory, one day at a time."""

    def __init__(self, spark, root):
        self.spark, self.storage = spark, LocalLakeStorage(root)

    def day(self, day, edges, profiles, quarantine=()):
        """edges: (a, b, key); profiles: (profile, hour of first sighting that day)."""
        noon = datetime(day.year, day.month, day.day, 12)
        rows = [
            (min(a, b), max(a, b), "member_id", "member_id", key, 1.0, noon, noon)
            for a, b, key in edges
        ]
        uri = self.storage.spark_uri
        self.spark.createDataFrame(rows, EDGES_SCHEMA).write.mode("overwrite").parquet(
            uri(day_dir(IDENTITY_EDGES, day))
        )
        self.spark.createDataFrame(
            [(p, "gaid", datetime(day.year, day.month, day.day, h), noon, 1) for p, h in profiles],
            "profile string, id_type string, first_seen timestamp, last_seen timestamp, "
            "events long",
        ).write.mode("overwrite").parquet(uri(day_dir(IDENTITY_PROFILES, day)))
        self.spark.createDataFrame(
            [("member_id", key, "super_node", 99, 3, True, noon, noon) for key in quarantine],
            "key_type string, key string, reason string, profiles long, profiles_before long, "
            "revokes_edges boolean, first_seen timestamp, last_seen timestamp",
        ).write.mode("overwrite").parquet(uri(day_dir(IDENTITY_QUARANTINE, day)))

    def update(self, day, **options):
        return update_components(self.spark, self.storage, day, **options)

    def assignment(self, day):
        path = self.storage.spark_uri(f"identity_components/date={day}")
        return {r.profile: (r.master, r.size) for r in self.spark.read.parquet(path).collect()}


@pytest.fixture
def lake(spark, tmp_path):
    return Lake(spark, tmp_path)


def test_incremental_days_equal_a_full_recompute(lake):
    d2, d3 = D1 + timedelta(days=1), D1 + timedelta(days=2)
    lake.day(D1, [("a", "b", "k1"), ("c", "d", "k2"), ("e", "f", "k3")], [(p, 1) for p in "abcdef"])
    lake.day(d2, [("a", "b", "k1"), ("b", "c", "k4"), ("g", "h", "k5")], [("g", 3), ("h", 2)])
    lake.day(d3, [("h", "e", "k6"), ("i", "a", "k1")], [("i", 1)])
    for day in (D1, d2, d3):
        update = lake.update(day)
    incremental = lake.assignment(d3)
    full = lake.update(d3, full_recompute=True)
    assert incremental == lake.assignment(d3)
    assert incremental["g"] == ("e", 4) and incremental["i"] == ("a", 5)
    assert update.mode == "incremental" and update.summary == full.summary
    assert (full.summary.largest_size, full.summary.largest_master) == (5, "a")
    assert full.summary.components_by_size == {4: 1, 5: 1}


def test_a_new_day_recomputes_only_the_components_it_touches(lake):
    d2 = D1 + timedelta(days=1)
    lake.day(D1, [("a", "b", "k1"), ("c", "d", "k2"), ("e", "f", "k3")], [(p, 1) for p in "abcdef"])
    lake.update(D1)
    lake.day(d2, [("a", "b", "k1"), ("d", "x", "k2")], [("x", 5)])
    change = lake.update(d2).change
    assert (change.profiles_touched, change.merges, change.new_components) == (3, 0, 0)


def test_a_newer_profile_never_takes_the_master_but_a_merge_with_an_older_one_does(lake):
    d2, d3 = D1 + timedelta(days=1), D1 + timedelta(days=2)
    lake.day(D1, [("m", "n", "k1"), ("o", "p", "k2")], [("m", 9), ("n", 10), ("o", 3), ("p", 4)])
    lake.update(D1)
    lake.day(d2, [("a", "n", "k1")], [("a", 0)])
    lake.update(d2)
    assert lake.assignment(d2)["a"] == ("m", 3)
    lake.day(d3, [("a", "p", "k9")], [])
    change = lake.update(d3).change
    assert lake.assignment(d3)["m"] == ("o", 5)
    assert change.merges == change.component_merges == 1


def test_an_id_seen_before_without_links_counts_as_a_merge_when_it_joins_a_person(lake):
    d2 = D1 + timedelta(days=1)
    lake.day(D1, [("a", "b", "k1")], [("a", 1), ("b", 2), ("lone", 3)])
    lake.update(D1)
    lake.day(d2, [("b", "lone", "k1"), ("b", "new", "k1")], [("new", 4)])
    change = lake.update(d2).change
    assert lake.assignment(d2)["lone"] == ("a", 4)
    assert (change.merges, change.component_merges, change.new_components) == (1, 0, 0)


def test_two_ids_seen_before_without_links_are_one_merge_when_linked_to_each_other(lake):
    d2 = D1 + timedelta(days=1)
    lake.day(D1, [("a", "b", "k1")], [("a", 1), ("b", 2), ("x", 3), ("y", 4)])
    lake.update(D1)
    lake.day(d2, [("x", "y", "k2"), ("n1", "n2", "k3")], [("n1", 1), ("n2", 2)])
    change = lake.update(d2).change
    assert (change.merges, change.component_merges, change.new_components) == (1, 0, 2)


def test_a_key_revoked_as_a_super_node_splits_the_component_it_built(lake):
    d2 = D1 + timedelta(days=1)
    lake.day(
        D1,
        [("a", "b", "shared"), ("a", "c", "shared"), ("c", "d", "own")],
        [(p, 1) for p in "abcd"],
    )
    lake.update(D1)
    assert lake.assignment(D1)["d"] == ("a", 4)
    lake.day(d2, [], [], quarantine=["shared"])
    change = lake.update(d2).change
    assert lake.assignment(d2) == {"c": ("c", 2), "d": ("c", 2)}
    assert change.splits == 2


def test_a_revoked_key_makes_the_summary_recount_the_whole_assignment(lake):
    d2 = D1 + timedelta(days=1)
    lake.day(
        D1,
        [("a", "b", "shared"), ("a", "c", "shared"), ("c", "d", "own"), ("x", "y", "k")],
        [(p, 1) for p in "abcdxy"],
    )
    lake.update(D1)
    lake.day(d2, [], [], quarantine=["shared"])
    summary = lake.update(d2).summary
    assert summary.components_by_size == {2: 2}
    assert (summary.largest_size, summary.largest_master) == (2, "c")


def test_weights_below_the_threshold_join_no_component(lake, spark):
    noon = datetime(2026, 11, 1, 12)
    spark.createDataFrame(
        [("a", "b", "fuzzy_ip_ua", "ip24_user_agent", "k", 0.5, noon, noon)], EDGES_SCHEMA
    ).write.parquet(lake.storage.spark_uri(day_dir(IDENTITY_EDGES, D1)))
    update = lake.update(D1)
    assert update.summary.components == 0 and lake.assignment(D1) == {}


@pytest.mark.parametrize(
    "second_day",
    [
        [("c", "z", "k3")],  # the largest component grows
        [("x", "w", "k4"), ("w", "v", "k5")],  # a smaller one grows past it
        [("x", "w", "k4")],  # a smaller one grows to its size: the smaller master wins
        [("n", "m", "k6")],  # a new component, the largest untouched
        [("y", "b", "k7")],  # two components merge
    ],
)
def test_the_incremental_summary_equals_counting_the_whole_assignment(lake, second_day):
    d2 = D1 + timedelta(days=1)
    lake.day(
        D1,
        [("a", "b", "k1"), ("b", "c", "k1"), ("x", "y", "k2")],
        [(p, 1) for p in "abcxy"],
    )
    lake.update(D1)
    newcomers = {p for edge in second_day for p in edge[:2]} - set("abcxy")
    lake.day(d2, second_day, [(p, 2) for p in sorted(newcomers)])
    update = lake.update(d2)
    assert update.mode == "incremental"
    components = set(lake.assignment(d2).values())  # (master, size), one per component
    largest = max(size for _, size in components)
    largest_master = min(master for master, size in components if size == largest)
    assert update.summary.components_by_size == Counter(size for _, size in components)
    assert (update.summary.largest_size, update.summary.largest_master) == (
        largest,
        largest_master,
    )
