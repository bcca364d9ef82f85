"""Components of a small profile graph finished in one partition: one Spark job, no rounds.

An incremental day recomputes a few hundred thousand edges; the distributed rounds
(``profile_store.identity.components``) would spend most of their time numbering string ids
and shuffling. Below ``LOCAL_EDGES`` pairs, the pairs and the first-seen times go to one
partition instead (an executor, never the driver), where Arrow dictionary-encodes the ids,
scipy labels the components and numpy picks each component's master: the same answer as the
distributed path (master = earliest first_seen, unknown last, ties by the smaller id).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

ASSIGNMENT_SCHEMA = "profile string, master string, first_seen timestamp, size long"
OUTPUT_ROWS = 1 << 18
_EDGE = 0
_SEEN = 1
_UNKNOWN = np.iinfo(np.int64).max


def assign(
    a: pa.Array, b: pa.Array, seen_profile: pa.Array, seen_at: pa.Array
) -> tuple[pa.Table, int]:
    """(profile, master, first_seen, size) of every end of the edges ``a``-``b``, and the
    number of distinct undirected edges. ``seen_*``: first-seen times (earliest counts)."""
    if len(a) == 0:
        return pa.table({"profile": pa.array([], pa.string())}), 0
    ends = pa.chunked_array([a, b]).combine_chunks().dictionary_encode()
    profiles = ends.dictionary
    index = ends.indices.to_numpy().astype(np.int64)
    n = len(profiles)
    src, dst = index[: len(a)], index[len(a) :]
    low, high = np.minimum(src, dst), np.maximum(src, dst)
    edges = len(np.unique(low * n + high)) if n else 0
    graph = coo_matrix((np.ones(len(src), dtype=np.int8), (src, dst)), shape=(n, n))
    _, label = connected_components(graph, directed=False)

    seen = np.full(n, _UNKNOWN, dtype=np.int64)
    position = pc.index_in(seen_profile, value_set=profiles)
    known = pc.and_(pc.is_valid(position), pc.is_valid(seen_at)).to_numpy(zero_copy_only=False)
    np.minimum.at(
        seen,
        position.filter(known).to_numpy().astype(np.int64),
        seen_at.filter(known).cast(pa.int64()).to_numpy(),
    )
    rank = np.empty(n, dtype=np.int64)
    rank[pc.sort_indices(profiles).to_numpy()] = np.arange(n)
    order = np.lexsort((rank, seen, label))  # by component, then oldest, then smallest id
    first = np.ones(n, dtype=bool)
    first[1:] = label[order][1:] != label[order][:-1]
    master_of = np.empty(label.max() + 1, dtype=np.int64)
    master_of[label[order][first]] = order[first]
    size = np.bincount(label)[label]
    table = pa.table(
        {
            "profile": profiles,
            "master": profiles.take(pa.array(master_of[label])),
            "first_seen": pa.array(seen, pa.int64(), mask=seen == _UNKNOWN).cast(
                pa.timestamp("us", tz="UTC")
            ),
            "size": pa.array(size, pa.int64()),
        }
    )
    return table, edges


def _assign_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    received = list(batches)
    if not received:
        return
    table = pa.Table.from_batches(received)
    edge = pc.equal(table["kind"], _EDGE)
    edges = table.filter(edge)
    if edges.num_rows == 0:
        return
    seen = table.filter(pc.invert(edge))
    result, _ = assign(
        edges["a"].combine_chunks(),
        edges["b"].combine_chunks(),
        seen["a"].combine_chunks(),
        seen["seen"].combine_chunks(),
    )
    yield from result.to_batches(max_chunksize=OUTPUT_ROWS)


def one_partition_components(pairs: DataFrame, first_seen: DataFrame) -> DataFrame:
    """The assignment of ``pairs`` (``profile_a``, ``profile_b``), computed in one partition.

    ``first_seen``: (profile, first_seen), at least for every profile of ``pairs``; rows of
    other profiles are ignored. Self-loops and null ends make no edge.
    """
    edges = pairs.where(
        F.col("profile_a").isNotNull()
        & F.col("profile_b").isNotNull()
        & (F.col("profile_a") != F.col("profile_b"))
    ).select(
        F.lit(_EDGE).alias("kind"),
        F.col("profile_a").alias("a"),
        F.col("profile_b").alias("b"),
        F.lit(None).cast("timestamp").alias("seen"),
    )
    seen = first_seen.select(
        F.lit(_SEEN).alias("kind"),
        F.col("profile").alias("a"),
        F.lit(None).cast("string").alias("b"),
        F.col("first_seen").alias("seen"),
    )
    return edges.unionByName(seen).coalesce(1).mapInArrow(_assign_partition, ASSIGNMENT_SCHEMA)
