"""Connected components in Spark: large-star / small-star, and the master of each component.

Kiveris et al., "Connected Components in MapReduce and Beyond" (SoCC 2014). Edges are kept
oriented ``(x, y)`` with ``x > y``. *Large-star* links every neighbour larger than a node to the
smallest id of that node's neighbourhood; *small-star* links a node and its smaller neighbours
to the smallest of them. Both keep connectivity and shrink the graph toward one star per
component whose centre is the smallest id; at most O(log^2 n) rounds, a handful in practice.
Every round is ``localCheckpoint``-ed so the lineage stays one round long, and nothing is
collected to the driver except the convergence counts.

Profile ids are strings; they are mapped to dense longs for the iterations and back at the end.
The master of a component is its oldest profile (earliest first_seen, ties by profile id),
chosen with one aggregation, so it never depends on the long ids.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

ASSIGNMENT_COLUMNS = ("profile", "master", "first_seen", "size")


@dataclass
class ComponentsRun:
    """Output of one connected-components computation."""

    labels: DataFrame  # node, component (smallest node id of the component)
    iterations: int
    edges: int  # distinct undirected edges, self-loops excluded


def _oriented(edges: DataFrame, src: str, dst: str) -> DataFrame:
    return (
        edges.where(F.col(src) != F.col(dst))
        .select(F.greatest(src, dst).alias("x"), F.least(src, dst).alias("y"))
        .distinct()
    )


def _large_star(edges: DataFrame) -> DataFrame:
    both = edges.select(F.col("x").alias("u"), F.col("y").alias("v")).unionByName(
        edges.select(F.col("y").alias("u"), F.col("x").alias("v"))
    )
    smallest = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
    return (
        both.where(F.col("v") > F.col("u"))
        .join(smallest, "u")
        .select(F.col("v").alias("x"), F.col("m").alias("y"))
        .distinct()
    )


def _small_star(edges: DataFrame) -> DataFrame:
    smallest = edges.groupBy("x").agg(F.min("y").alias("m"))
    leaves = (
        edges.join(smallest, "x")
        .where(F.col("y") != F.col("m"))
        .select(F.col("y").alias("x"), F.col("m").alias("y"))
    )
    return leaves.unionByName(smallest.select("x", F.col("m").alias("y"))).distinct()


def _is_star_forest(edges: DataFrame) -> bool:
    """Each node has one parent and no parent has a parent: every component is a star."""
    counts = edges.agg(
        F.count(F.lit(1)).alias("edges"), F.countDistinct("x").alias("children")
    ).first()
    if counts["edges"] != counts["children"]:
        return False
    parents = edges.select(F.col("y").alias("x")).distinct()
    return edges.join(parents, "x", "left_semi").isEmpty()


def connected_components(
    edges: DataFrame, src: str = "src", dst: str = "dst", max_iterations: int = 64
) -> ComponentsRun:
    """Label every node of ``edges`` (long ids) with the smallest node id of its component.

    Self-loops are ignored (a node with only a self-loop gets no label).
    """
    current = _oriented(edges, src, dst).localCheckpoint(eager=True)
    edge_count = current.count()
    iterations = 0
    while True:
        iterations += 1
        if iterations > max_iterations:
            raise RuntimeError(f"connected components: no convergence in {max_iterations} rounds")
        previous = current
        current = _small_star(_large_star(current)).localCheckpoint(eager=True)
        previous.unpersist()
        if _is_star_forest(current):
            break
    roots = current.select(F.col("y").alias("node")).distinct()
    labels = current.select(F.col("x").alias("node"), F.col("y").alias("component")).unionByName(
        roots.select("node", F.col("node").alias("component"))
    )
    return ComponentsRun(labels=labels, iterations=iterations, edges=edge_count)


def profile_components(
    pairs: DataFrame, first_seen: DataFrame, max_iterations: int = 64
) -> tuple[DataFrame, ComponentsRun]:
    """Components of profile pairs (``profile_a``, ``profile_b``) with their masters.

    ``first_seen``: (profile, first_seen) for at least every profile of ``pairs``. Returns
    (profile, master, first_seen, size) for every profile with an edge, and the run.
    """
    nodes = (
        pairs.select(F.col("profile_a").alias("profile"))
        .unionByName(pairs.select(F.col("profile_b").alias("profile")))
        .distinct()
    )
    # Dense long ids, fixed by the checkpoint so that both edge ends see the same ids.
    ids = nodes.withColumn("node", F.monotonically_increasing_id()).localCheckpoint(eager=True)
    numbered = (
        pairs.join(
            ids.select(F.col("profile").alias("profile_a"), F.col("node").alias("src")), "profile_a"
        )
        .join(
            ids.select(F.col("profile").alias("profile_b"), F.col("node").alias("dst")), "profile_b"
        )
        .select("src", "dst")
    )
    run = connected_components(numbered, max_iterations=max_iterations)
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
