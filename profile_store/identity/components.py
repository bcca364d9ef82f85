"""Connected components in Spark: local contraction with scipy, and the master of each component.

Each round is one pass of three partition-wise steps over the edges of the round's graph,
with a shuffle before each of the last two:

1. the edges, oriented ``x > y``, are spread over ``partitions`` partitions by hash(x); each
   partition runs ``scipy.sparse.csgraph.connected_components`` on its own edges and emits
   (node, root) for every node it holds, root being the smallest node of its local component;
2. the pairs go by hash(node): a node held by several partitions gets the smallest of its roots
   as *parent*, and every other root of it an edge to that parent. Those edges are the next
   round's graph: its nodes are roots only, and a component whose edges all met in one
   partition leaves nothing behind. Every round removes at least the largest node of each
   component, in practice most of the edges;
3. once the next graph has at most ``local_edges`` edges, it is finished in one partition
   (scipy again). Then, from the last round back to the first, each node's parent is replaced
   by its parent's label from the round after (a join by hash(parent)).

A node's label is the smallest node of its component: the smallest node of a component is a
root wherever it appears, so it survives every round and is the label the last step gives.
Rounds are ``localCheckpoint``-ed; the driver only reads two counts per round. Between the
steps the arrays travel as binary blobs of numpy columns (``profile_store.identity.contraction``),
the numpy/scipy work runs in ``mapInArrow`` over whole partitions, never per edge.

Profile ids are strings; they are mapped to dense longs for the iterations and back at the end.
The master of a component is its oldest profile (earliest first_seen, ties by profile id),
chosen with one aggregation, so it never depends on the long ids.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from profile_store.identity import contraction as C
from profile_store.identity.one_partition import one_partition_components

log = logging.getLogger(__name__)

ASSIGNMENT_COLUMNS = ("profile", "master", "first_seen", "size")
LOCAL_EDGES = 2_000_000  # a round's graph at most this large is finished in one partition


@dataclass
class ComponentsRun:
    """Output of one connected-components computation."""

    labels: DataFrame | None  # node, component (smallest id); None: finished in one partition
    iterations: int  # distributed rounds, plus one for the final single-partition step
    edges: int  # distinct undirected edges, self-loops excluded


def connected_components(
    edges: DataFrame,
    src: str = "src",
    dst: str = "dst",
    max_iterations: int = 64,
    partitions: int | None = None,
    local_edges: int = LOCAL_EDGES,
) -> ComponentsRun:
    """Label every node of ``edges`` (long ids) with the smallest node id of its component.

    Self-loops and edges with a null end are ignored (a node with only a self-loop gets no
    label). ``partitions``: width of every round (default: the default parallelism);
    ``local_edges``: size under which the remaining graph is finished in one partition.
    """
    spark = edges.sparkSession
    width = max(1, partitions or spark.sparkContext.defaultParallelism)
    keys = C.partition_keys(width)
    clean = edges.select(
        F.col(src).cast("long").alias("src"), F.col(dst).cast("long").alias("dst")
    ).where(F.col("src").isNotNull() & F.col("dst").isNotNull() & (F.col("src") != F.col("dst")))
    current = clean.mapInArrow(C.prepare(keys, C.salt(1, 0)), C.BLOB_SCHEMA)
    rounds: list[DataFrame] = []
    edge_count = 0
    while True:
        started = time.perf_counter()
        round_ = len(rounds) + 1
        if round_ > max_iterations:
            raise RuntimeError(f"connected components: no convergence in {max_iterations} rounds")
        pairs = current.repartition(width, "bucket").mapInArrow(
            C.contract(keys, C.salt(round_, 1), count_distinct=round_ == 1), C.BLOB_SCHEMA
        )
        grouped = (
            pairs.repartition(width, "bucket")
            .mapInArrow(C.group(keys, C.salt(round_ + 1, 0), C.salt(round_, 2)), C.BLOB_SCHEMA)
            .localCheckpoint(eager=True)
        )
        rounds.append(grouped)
        totals = {
            row["kind"]: int(row["rows"])
            for row in grouped.where(F.col("kind").isin(C.EDGES, C.DISTINCT_EDGES))
            .groupBy("kind")
            .agg(F.sum("rows").alias("rows"))
            .collect()
        }
        if round_ == 1:
            edge_count = totals.get(C.DISTINCT_EDGES, 0)
        remaining = totals.get(C.EDGES, 0)
        current = grouped.where(F.col("kind") == C.EDGES)
        log.info(
            "components round %d: %d edges left (%.1f s)",
            round_,
            remaining,
            time.perf_counter() - started,
        )
        if remaining <= local_edges:
            break
    labels = None
    if remaining:
        labels = current.coalesce(1).mapInArrow(
            C.finish(keys, C.salt(len(rounds), 2)), C.BLOB_SCHEMA
        )
    for round_ in range(len(rounds), 0, -1):
        joined = rounds[round_ - 1].where(F.col("kind") == C.POINTERS)
        if labels is not None:
            joined = joined.unionByName(labels)
        joined = joined.repartition(width, "bucket")
        if round_ > 1:
            labels = joined.mapInArrow(
                C.resolve_to_blobs(keys, C.salt(round_ - 1, 2)), C.BLOB_SCHEMA
            )
        else:
            result = joined.mapInArrow(C.resolve_to_rows, C.LABELS_SCHEMA)
    iterations = len(rounds) + (1 if remaining else 0)
    return ComponentsRun(labels=result, iterations=iterations, edges=edge_count)


def profile_components(
    pairs: DataFrame,
    first_seen: DataFrame,
    max_iterations: int = 64,
    local_edges: int = LOCAL_EDGES,
) -> tuple[DataFrame, ComponentsRun]:
    """Components of profile pairs (``profile_a``, ``profile_b``) with their masters.

    ``first_seen``: (profile, first_seen) for at least every profile of ``pairs``. Returns
    (profile, master, first_seen, size) for every profile with an edge, and the run. At most
    ``local_edges`` distinct edges are finished in one partition (``one_partition``);
    more go through the distributed rounds.
    """
    edges = (
        pairs.where(F.col("profile_a") != F.col("profile_b"))
        .select(
            F.least("profile_a", "profile_b").alias("profile_a"),
            F.greatest("profile_a", "profile_b").alias("profile_b"),
        )
        .distinct()
        .localCheckpoint(eager=True)
    )
    edge_count = edges.count()
    if edge_count <= local_edges:
        assignment = one_partition_components(edges, first_seen)
        return assignment, ComponentsRun(labels=None, iterations=1, edges=edge_count)
    nodes = (
        edges.select(F.col("profile_a").alias("profile"))
        .unionByName(edges.select(F.col("profile_b").alias("profile")))
        .distinct()
    )
    # Dense long ids, fixed by the checkpoint so that both edge ends see the same ids.
    ids = nodes.withColumn("node", F.monotonically_increasing_id()).localCheckpoint(eager=True)
    numbered = (
        edges.join(
            ids.select(F.col("profile").alias("profile_a"), F.col("node").alias("src")), "profile_a"
        )
        .join(
            ids.select(F.col("profile").alias("profile_b"), F.col("node").alias("dst")), "profile_b"
        )
        .select("src", "dst")
    )
    run = connected_components(numbered, max_iterations=max_iterations)
    if run.labels is None:  # only one_partition_components's run has none
        raise RuntimeError("connected components: the distributed run returned no labels")
    labelled = (
        run.labels.join(ids, "node")
        .join(first_seen, "profile", "left")
        .select("profile", "component", "first_seen")
    )
    masters = labelled.groupBy("component").agg(
        F.min_by("profile", F.struct(F.col("first_seen").isNull(), "first_seen", "profile")).alias(
            "master"
        ),
        F.count(F.lit(1)).alias("size"),
    )
    assignment = labelled.join(masters, "component").select(*ASSIGNMENT_COLUMNS)
    return assignment, run
