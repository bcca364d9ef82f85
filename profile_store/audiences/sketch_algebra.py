"""Set algebra on theta sketches: leaf unions, "at least N times", and the query tree.

Unions, intersections and differences run in the DataSketches C++ library. The one thing it
cannot do for us is "users whose summed count over these rows is >= N": that sums the integer
summaries of the rows' tuple sketches per user hash, keeps the users at or above N, and writes
them back as a compact theta sketch so the rest of the tree treats them like any other leaf.
The estimate stays unbiased: every row's sketch holds all of its users with a hash below the
common theta, so each retained user's sum is exact.
"""

from __future__ import annotations

import struct

import numpy as np
from datasketches import (
    compact_theta_sketch,
    theta_a_not_b,
    theta_intersection,
    theta_union,
)

from profile_store.audiences.query import Leaf, Node, Operation
from profile_store.audiences.tuple_serde import count_entries

MAX_THETA = (1 << 63) - 1
DEFAULT_SEED_HASH = 0x93CC  # DataSketches' default seed 9001, as Spark uses it

_SERIAL_VERSION = 3
_COMPACT_FAMILY = 3
_FLAGS = 0x02 | 0x08 | 0x10  # read-only, compact, ordered
_EMPTY = 0x04


def compact_theta_from_hashes(
    hashes: np.ndarray, theta64: int, seed_hash: int = DEFAULT_SEED_HASH
) -> compact_theta_sketch:
    """A compact theta sketch (serial version 3) holding ``hashes`` under ``theta64``."""
    hashes = np.sort(np.asarray(hashes, dtype=np.uint64))
    if len(hashes) == 0 and theta64 >= MAX_THETA:
        header = struct.pack(
            "<BBBBBBH", 1, _SERIAL_VERSION, _COMPACT_FAMILY, 0, 0, _FLAGS | _EMPTY, seed_hash
        )
        return compact_theta_sketch.deserialize(header)
    estimating = theta64 < MAX_THETA
    preamble = 3 if estimating else 2
    header = struct.pack(
        "<BBBBBBHII",
        preamble,
        _SERIAL_VERSION,
        _COMPACT_FAMILY,
        0,
        0,
        _FLAGS,
        seed_hash,
        len(hashes),
        0,
    )
    if estimating:
        header += struct.pack("<Q", theta64)
    return compact_theta_sketch.deserialize(header + hashes.astype("<u8").tobytes())


def union_theta(blobs: list[bytes], lg_k: int) -> compact_theta_sketch:
    union = theta_union(lg_k)
    for blob in blobs:
        union.update(compact_theta_sketch.deserialize(bytes(blob)))
    return union.get_result()


def users_with_min_count(blobs: list[bytes], min_count: int, lg_k: int) -> compact_theta_sketch:
    """Users whose events summed over all ``blobs`` (Spark integer tuple sketches) >= N."""
    theta = MAX_THETA
    hash_parts: list[np.ndarray] = []
    count_parts: list[np.ndarray] = []
    seed_hash = DEFAULT_SEED_HASH
    for blob in blobs:
        entries = count_entries(blob)
        seed_hash = entries.seed_hash
        theta = min(theta, entries.theta64)
        if len(entries.hashes):
            hash_parts.append(entries.hashes)
            count_parts.append(entries.counts)
    if not hash_parts:
        return compact_theta_from_hashes(np.empty(0, np.uint64), theta, seed_hash)
    hashes = np.concatenate(hash_parts)
    counts = np.concatenate(count_parts)
    below = hashes < np.uint64(theta)
    unique, inverse = np.unique(hashes[below], return_inverse=True)
    sums = np.bincount(inverse, weights=counts[below], minlength=len(unique))
    k = 1 << lg_k
    if len(unique) > k:  # what a union of nominal size k keeps: the k smallest hashes
        theta = int(unique[k])
        unique, sums = unique[:k], sums[:k]
    return compact_theta_from_hashes(unique[sums >= min_count], theta, seed_hash)


def evaluate(node: Node, leaf_sketches: dict[str, compact_theta_sketch], lg_k: int):
    """The tree's result sketch, from one sketch per leaf (keyed by the leaf's JSON path)."""
    if isinstance(node, Leaf):
        return leaf_sketches[node.path]
    children = [evaluate(child, leaf_sketches, lg_k) for child in node.children]
    return combine(node, children, lg_k)


def combine(node: Operation, children: list, lg_k: int) -> compact_theta_sketch:
    if node.operator == "union":
        union = theta_union(lg_k)
        for child in children:
            union.update(child)
        return union.get_result()
    if node.operator == "intersection":
        intersection = theta_intersection()
        for child in children:
            intersection.update(child)
        return intersection.get_result()
    rest = (
        children[1]
        if len(children) == 2
        else combine(Operation(node.path, "union", node.children[1:]), children[1:], lg_k)
    )
    return theta_a_not_b().compute(children[0], rest)
