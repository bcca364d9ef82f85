"""Columnar work of the connected-components rounds, run by Python workers over numpy arrays.

Everything here works on whole arrays of node ids (``int64``): one call per partition and
per blob, never per edge. Between stages the arrays travel through Spark's shuffle as *blobs*:
rows ``(bucket, kind, rows, payload)`` whose payload holds two little-endian ``int64`` columns
of ``rows`` values each (``a`` then ``b``), at most ``CHUNK`` pairs per blob. A shuffle of a
few dozen binary rows costs a fraction of one of millions of two-long rows, and the data still
only moves between executors (the driver sees none of it).

``bucket`` is the Spark key of the target partition: ``repartition(n, "bucket")`` sends the
rows of key ``partition_keys(n)[t]`` to partition ``t`` (Spark's Murmur3 of the key, mod n).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa

BLOB_SCHEMA = "bucket int, kind int, rows long, payload binary"
LABELS_SCHEMA = "node long, component long"

# Blob kinds.
EDGES = 0  # (x, y), x > y: edges of a round (or of the final local step)
PAIRS = 1  # (node, root): a node and the smallest node of its component in one partition
POINTERS = 2  # (node, parent): the parent is in the next round's graph, or is the answer
LABELS = 3  # (node, component): the answer for the nodes of a round's graph
DISTINCT_EDGES = 4  # no payload; rows = distinct edges of one partition of the first round

CHUNK = 1 << 20  # pairs per blob (16 MiB)
BLOBS_PER_BATCH = 8
OUTPUT_ROWS = 1 << 20  # rows per Arrow batch of the final labels
DENSE = 4  # index arrays by id directly when the id span is at most DENSE x the values
_NO_NODE = np.iinfo(np.int64).max
_INT = 0xFFFFFFFF


# -- Spark partition keys ------------------------------------------------------------------


def _rotl32(value: int, shift: int) -> int:
    return ((value << shift) | (value >> (32 - shift))) & _INT


def spark_int_hash(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of an ``int`` (Murmur3_x86_32.hashInt), as a signed 32-bit int."""
    k1 = _rotl32((value * 0xCC9E2D51) & _INT, 15) * 0x1B873593 & _INT
    h1 = _rotl32(seed ^ k1, 13)
    h1 = (h1 * 5 + 0xE6546B64) & _INT
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _INT
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _INT
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 >= 1 << 31 else h1


def partition_keys(partitions: int) -> list[int]:
    """For each partition t of ``repartition(partitions, key)``, an int key that lands in t."""
    keys: dict[int, int] = {}
    candidate = 0
    while len(keys) < partitions:
        keys.setdefault(spark_int_hash(candidate) % partitions, candidate)
        candidate += 1
    return [keys[target] for target in range(partitions)]


# -- hashing and blobs ---------------------------------------------------------------------


def salt(round_: int, stage: int) -> int:
    """A distinct hash salt for each (round, stage) so that rounds never share a layout."""
    return ((round_ * 4 + stage + 1) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF


def bucket_of(values: np.ndarray, salt_: int, partitions: int) -> np.ndarray:
    """splitmix64 of (value + salt), mod partitions."""
    z = values.view(np.uint64) + np.uint64(salt_)
    z ^= z >> np.uint64(30)
    z *= np.uint64(0xBF58476D1CE4E5B9)
    z ^= z >> np.uint64(27)
    z *= np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z % np.uint64(partitions)).astype(np.int16 if partitions < 1 << 15 else np.int64)


def count_row(kind: int, value: int, key: int) -> pa.RecordBatch:
    """A blob row carrying only a count."""
    return pa.record_batch(
        [
            pa.array([key], pa.int32()),
            pa.array([kind], pa.int32()),
            pa.array([value], pa.int64()),
            pa.array([b""], pa.binary()),
        ],
        names=["bucket", "kind", "rows", "payload"],
    )


def emit(
    kind: int, a: np.ndarray, b: np.ndarray, by: np.ndarray, salt_: int, keys: list[int]
) -> Iterator[pa.RecordBatch]:
    """Blobs of the pairs (a, b), each sent to the partition of hash(by)."""
    partitions = len(keys)
    order = None
    if partitions == 1:
        counts = np.array([len(a)])
    else:
        target = bucket_of(by, salt_, partitions)
        order = np.argsort(target, kind="stable")  # radix sort of small ints
        counts = np.bincount(target, minlength=partitions)
    ends = np.cumsum(counts).tolist()
    chunks = [
        (keys[t], low, min(end, low + CHUNK))
        for t, end in enumerate(ends)
        for low in range(end - int(counts[t]), end, CHUNK)
    ]
    for first in range(0, len(chunks), BLOBS_PER_BATCH):
        group = chunks[first : first + BLOBS_PER_BATCH]
        data = np.empty(2 * sum(high - low for _, low, high in group), dtype="<i8")
        offsets = np.zeros(len(group) + 1, dtype=np.int32)
        at = 0
        for i, (_, low, high) in enumerate(group):
            n = high - low
            if order is None:
                data[at : at + n] = a[low:high]
                data[at + n : at + 2 * n] = b[low:high]
            else:
                np.take(a, order[low:high], out=data[at : at + n])
                np.take(b, order[low:high], out=data[at + n : at + 2 * n])
            at += 2 * n
            offsets[i + 1] = 8 * at
        payload = pa.Array.from_buffers(
            pa.binary(), len(group), [None, pa.py_buffer(offsets), pa.py_buffer(data)]
        )
        yield pa.record_batch(
            [
                pa.array([key for key, _, _ in group], pa.int32()),
                pa.array([kind] * len(group), pa.int32()),
                pa.array([high - low for _, low, high in group], pa.int64()),
                payload,
            ],
            names=["bucket", "kind", "rows", "payload"],
        )


class Blobs:
    """The blobs of one partition, decoded by kind into concatenated (a, b) arrays."""

    def __init__(self, batches: Iterable[pa.RecordBatch]):
        self.parts: dict[int, list[np.ndarray]] = {}
        self.counts: dict[int, int] = {}
        for batch in batches:
            kinds = batch.column(1).to_numpy()
            rows = batch.column(2).to_numpy()
            payload = batch.column(3)
            for i in range(batch.num_rows):  # one iteration per blob of up to CHUNK pairs
                kind, n = int(kinds[i]), int(rows[i])
                if kind == DISTINCT_EDGES:
                    self.counts[kind] = self.counts.get(kind, 0) + n
                elif n:
                    values = np.frombuffer(payload[i].as_buffer(), dtype="<i8")
                    self.parts.setdefault(kind, []).append(values.reshape(2, n))

    def pairs(self, kind: int) -> tuple[np.ndarray, np.ndarray]:
        parts = self.parts.get(kind)
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty
        both = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        return both[0].astype(np.int64, copy=False), both[1].astype(np.int64, copy=False)


# -- numpy kernels -------------------------------------------------------------------------


def _dense_span(*arrays: np.ndarray) -> tuple[int, int] | None:
    """(low, span) of the ids when indexing by id is cheap (span <= DENSE x values)."""
    size = sum(len(values) for values in arrays)
    if not size:
        return None
    low = min(int(values.min()) for values in arrays if len(values))
    high = max(int(values.max()) for values in arrays if len(values))
    span = high - low + 1
    if span > DENSE * size or span >= 1 << 31:
        return None
    return low, span


def _roots(n: int, row: np.ndarray, col: np.ndarray) -> tuple[np.ndarray, int]:
    """For n dense nodes and edges (row, col): each node's smallest node index in its
    component, and the number of distinct (row, col) pairs."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    # tocsr() sums duplicate entries: nnz is the number of distinct pairs.
    graph = coo_matrix((np.ones(len(row), dtype=np.bool_), (row, col)), shape=(n, n)).tocsr()
    count, label = connected_components(graph, directed=True, connection="weak")
    first = np.full(count, n, dtype=np.int64)
    np.minimum.at(first, label, np.arange(n, dtype=np.int64))
    return first[label], int(graph.nnz)


def local_components(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Nodes of the edges (x, y) (ascending), each one's smallest component node, and the
    number of distinct edges (x > y on every edge)."""
    m = len(x)
    if not m:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, 0
    dense = _dense_span(x, y)
    if dense is not None:
        low, n = dense
        row, col = x - low, y - low
        root, distinct = _roots(n, row, col)
        touched = np.zeros(n, dtype=np.bool_)
        touched[row] = True
        touched[col] = True
        index = np.flatnonzero(touched)
        nodes, roots = index + low, root[index] + low
    else:
        ends = np.concatenate([x, y])
        order = np.argsort(ends)
        ordered = ends[order]
        new = np.empty(len(ends), dtype=np.bool_)
        new[0] = True
        np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
        nodes = ordered[new]
        n = len(nodes)
        inverse = np.empty(len(ends), dtype=np.int64)
        inverse[order] = np.cumsum(new) - 1
        row, col = inverse[:m], inverse[m:]
        root, distinct = _roots(n, row, col)
        roots = nodes[root]
    return nodes, roots, distinct


def smallest_root(node: np.ndarray, root: np.ndarray):
    """Group the (node, root) pairs by node: (nodes, their smallest root, the smallest root of
    each pair's node)."""
    dense = _dense_span(node)
    if dense is not None:
        low, n = dense
        index = node - low
        best = np.full(n, _NO_NODE, dtype=np.int64)
        np.minimum.at(best, index, root)
        seen = np.zeros(n, dtype=np.bool_)
        seen[index] = True
        present = np.flatnonzero(seen)
        return present + low, best[present], best[index]
    order = np.argsort(node)
    ordered = node[order]
    new = np.empty(len(node), dtype=np.bool_)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    smallest = np.minimum.reduceat(root[order], starts)
    per_pair = np.empty(len(node), dtype=np.int64)
    per_pair[order] = np.repeat(smallest, np.diff(np.append(starts, len(node))))
    return ordered[starts], smallest, per_pair


def resolve(parent: np.ndarray, node: np.ndarray, component: np.ndarray) -> np.ndarray:
    """component[node == parent] for each parent found among ``node`` (unique), else parent."""
    if not len(node) or not len(parent):
        return parent
    dense = _dense_span(parent, node)
    if dense is not None:
        low, n = dense
        table = np.empty(n, dtype=np.int64)
        known = np.zeros(n, dtype=np.bool_)
        table[node - low] = component
        known[node - low] = True
        index = parent - low
        return np.where(known[index], table[index], parent)
    order = np.argsort(node)
    node, component = node[order], component[order]
    by_parent = np.argsort(parent)
    wanted = parent[by_parent]
    at = np.minimum(np.searchsorted(node, wanted), len(node) - 1)
    hit = node[at] == wanted
    result = parent.copy()
    result[by_parent[hit]] = component[at[hit]]
    return result


# -- the stages (one call per partition) -----------------------------------------------------


def prepare(keys: list[int], salt_: int):
    """Input rows (src, dst) -> edge blobs (x, y), x > y, sent to the partition of hash(x)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        buffered: list[pa.RecordBatch] = []
        size = 0
        for batch in batches:
            buffered.append(batch)
            size += batch.num_rows
            if size >= 4 * CHUNK:
                yield from flush(buffered)
                buffered, size = [], 0
        if buffered:
            yield from flush(buffered)

    def flush(buffered: list[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = pa.Table.from_batches(buffered)
        src = table.column(0).to_numpy().astype(np.int64, copy=False)
        dst = table.column(1).to_numpy().astype(np.int64, copy=False)
        x = np.maximum(src, dst)
        yield from emit(EDGES, x, np.minimum(src, dst), x, salt_, keys)

    return run


def contract(keys: list[int], salt_: int, count_distinct: bool):
    """Edge blobs -> (node, root) blobs of this partition's components, sent by hash(node)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        x, y = Blobs(batches).pairs(EDGES)
        nodes, roots, distinct = local_components(x, y)
        if count_distinct:
            yield count_row(DISTINCT_EDGES, distinct, keys[0])
        if len(nodes):
            yield from emit(PAIRS, nodes, roots, nodes, salt_, keys)

    return run


def group(keys: list[int], edges_salt: int, pointers_salt: int):
    """(node, root) blobs -> pointers node -> smallest root (sent by hash(parent)), and the
    next round's edges root -> smallest root for every other root of a node (by hash(root))."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        blobs = Blobs(batches)
        if DISTINCT_EDGES in blobs.counts:
            yield count_row(DISTINCT_EDGES, blobs.counts[DISTINCT_EDGES], keys[0])
        node, root = blobs.pairs(PAIRS)
        if not len(node):
            return
        nodes, parent, per_pair = smallest_root(node, root)
        yield from emit(POINTERS, nodes, parent, parent, pointers_salt, keys)
        link = root != per_pair
        if link.any():
            x, y = root[link], per_pair[link]
            yield from emit(EDGES, x, y, x, edges_salt, keys)

    return run


def finish(keys: list[int], salt_: int):
    """The last (small) edge blobs, all in one partition -> labels (node, component)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        x, y = Blobs(batches).pairs(EDGES)
        nodes, roots, _ = local_components(x, y)
        if len(nodes):
            yield from emit(LABELS, nodes, roots, nodes, salt_, keys)

    return run


def _resolved(batches: Iterator[pa.RecordBatch]) -> tuple[np.ndarray, np.ndarray]:
    blobs = Blobs(batches)
    node, parent = blobs.pairs(POINTERS)
    labelled, component = blobs.pairs(LABELS)
    return node, resolve(parent, labelled, component)


def resolve_to_blobs(keys: list[int], salt_: int):
    """Pointers + the next round's labels -> this round's labels, sent by hash(node)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        node, component = _resolved(batches)
        if len(node):
            yield from emit(LABELS, node, component, node, salt_, keys)

    return run


def resolve_to_rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Pointers of the first round + the second round's labels -> rows (node, component)."""
    node, component = _resolved(batches)
    for low in range(0, len(node), OUTPUT_ROWS):
        high = low + OUTPUT_ROWS
        yield pa.record_batch(
            [pa.array(node[low:high]), pa.array(component[low:high])],
            names=["node", "component"],
        )
