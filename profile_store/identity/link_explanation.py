"""Why two ids are one person, or why not: the chain of keys, or the nearest missing link.

Answered from the lake with Arrow (no Spark), over what ``identity_components`` trusted: edges
of at least the weight threshold whose key was never quarantined. Two linked ids get the
shortest chain of hops between them, each hop two profiles and the key they share. Two unlinked
ids get the nearest reason, looking at every profile of each one's component: a shared key that
was quarantined (a super node with its profile count, or a blocklisted placeholder), a shared
key whose edge weighs less than the threshold, a shared alternate id of a kind the identity
configuration does not bridge (read from the events: the key tables hold bridging kinds only),
or no shared key at all.

Key values are personal data (logins, phone numbers): a hop shows a kind whose values are
already digests (``email_sha256``) as stored, any other as ``sha256:`` and the start of its
SHA-256, enough to check against a value one holds.
"""

from __future__ import annotations

import hashlib
import io
from collections import deque
from dataclasses import dataclass
from pathlib import PurePosixPath

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.identity.rules import BridgingRules
from profile_store.identity.super_nodes import REASON_BLOCKLIST, REASON_SUPER_NODE
from profile_store.lake.arrow_areas import read_area
from profile_store.lake.layout import (
    EVENTS,
    IDENTITY_EDGES,
    IDENTITY_KEYS,
    IDENTITY_PROFILES,
    IDENTITY_QUARANTINE,
)
from profile_store.lake.storage import LakeStorage

DEFAULT_WEIGHT_THRESHOLD = 0.9
"""The components' default threshold (``identity_components``' ``weight_threshold``)."""

DIGEST_SUFFIXES = ("_sha256", "_sha1", "_md5", "_hash")
"""Kinds whose values are digests already, shown as stored."""

SAME_ID = "same_id"
UNKNOWN_ID = "unknown_id"
QUARANTINED = "quarantined_key"
BELOW_THRESHOLD = "below_threshold"
NON_BRIDGING_KIND = "non_bridging_kind"
NO_SHARED_KEY = "no_shared_key"
NOT_IN_COMPONENTS = "not_in_components"


def shown_key(key_type: str, key: str) -> str:
    """The key as a hop shows it: a digest kind as stored, any other value as its digest."""
    if key_type.endswith(DIGEST_SUFFIXES):
        return key
    return "sha256:" + hashlib.sha256(key.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Hop:
    """Two profiles linked by one key they share."""

    profile_a: str
    profile_b: str
    key_type: str
    key: str  # as ``shown_key`` shows it
    weight: float


@dataclass(frozen=True)
class LinkExplanation:
    """How ``a`` and ``b`` are linked (``chain``, a to b) or the nearest reason they are not."""

    a: str
    b: str
    linked: bool
    chain: list[Hop]
    reason: str | None  # one of the constants above, None when linked by a chain
    detail: str  # one sentence for a person


def _profiles_of(table: pa.Table, column: str, members: set[str]) -> pa.Table:
    return table.filter(pc.is_in(table[column], pa.array(sorted(members), pa.string())))


def _component(assignment: pa.Table | None, profile: str) -> tuple[str, set[str]]:
    """(master, members) of the profile's latest component; a profile of no edge is alone."""
    if assignment is None:
        return profile, {profile}
    own = _profiles_of(assignment, "profile", {profile})
    if own.num_rows == 0:
        return profile, {profile}
    master = own["master"][0].as_py()
    members = assignment.filter(pc.equal(assignment["master"], master))["profile"].to_pylist()
    return master, set(members)


def _chain(edges: pa.Table, a: str, b: str) -> list[Hop] | None:
    """The shortest path of edges from a to b (breadth first), None if there is none."""
    neighbours: dict[str, list[tuple[str, Hop]]] = {}
    for row in edges.to_pylist():
        hop = Hop(
            row["profile_a"],
            row["profile_b"],
            row["key_type"],
            shown_key(row["key_type"], row["key"]),
            float(row["weight"]),
        )
        neighbours.setdefault(hop.profile_a, []).append((hop.profile_b, hop))
        neighbours.setdefault(hop.profile_b, []).append((hop.profile_a, hop))
    came_from: dict[str, tuple[str, Hop] | None] = {a: None}
    queue = deque([a])
    while queue:
        node = queue.popleft()
        if node == b:
            break
        for neighbour, hop in sorted(neighbours.get(node, []), key=lambda n: n[0]):
            if neighbour not in came_from:
                came_from[neighbour] = (node, hop)
                queue.append(neighbour)
    if b not in came_from:
        return None
    chain, node = [], b
    while (step := came_from[node]) is not None:
        previous, hop = step
        chain.append(Hop(previous, node, hop.key_type, hop.key, hop.weight))  # along the walk
        node = previous
    return chain[::-1]


def _alt_ids_of(storage: LakeStorage, profiles: set[str]) -> set[tuple[str, str, str]]:
    """(profile, kind, value) of every alternate id the events give those profiles."""
    found: set[tuple[str, str, str]] = set()
    if not storage.exists(EVENTS):
        return found
    wanted = pa.array(sorted(profiles), pa.string())
    for entry in storage.list_files(EVENTS):
        name = PurePosixPath(entry.path).name
        if not name.endswith(".parquet") or name.startswith(("_", ".")):
            continue
        data = io.BytesIO(storage.read_bytes(entry.path))
        table = pq.read_table(data, columns=["user_id", "alt_ids"])
        table = table.filter(pc.is_in(table["user_id"], wanted))
        for row in table.to_pylist():
            for kind, value in row["alt_ids"] or []:
                if value is not None:
                    found.add((row["user_id"], kind, value))
    return found


def _keys_shared(rows: set[tuple[str, str, str]], side_a: set[str], side_b: set[str]):
    """(kind, value) -> (a profile, b profile) for each key both sides carry."""
    of_a = {(kind, value): profile for profile, kind, value in rows if profile in side_a}
    of_b = {(kind, value): profile for profile, kind, value in rows if profile in side_b}
    return {key: (of_a[key], of_b[key]) for key in sorted(set(of_a) & set(of_b))}


def explain_link(
    storage: LakeStorage,
    a: str,
    b: str,
    rules: BridgingRules,
    threshold: float = DEFAULT_WEIGHT_THRESHOLD,
) -> LinkExplanation:
    """The chain of keys linking ``a`` to ``b`` in the latest components, or why there is none."""

    def unlinked(reason: str, detail: str) -> LinkExplanation:
        return LinkExplanation(a, b, False, [], reason, detail)

    if a == b:
        return LinkExplanation(a, b, True, [], SAME_ID, "the same id")
    known = _profiles_of(read_area(storage, IDENTITY_PROFILES, ["profile"]), "profile", {a, b})
    missing = [i for i in (a, b) if i not in set(known["profile"].to_pylist())]
    if missing:
        return unlinked(UNKNOWN_ID, f"{missing[0]}: no such profile in the lake's identity graph")
    latest = latest_assignment_dir(storage)
    assignment = read_area(storage, latest, ["profile", "master"]) if latest else None
    master_a, side_a = _component(assignment, a)
    master_b, side_b = _component(assignment, b)
    quarantine = read_area(
        storage, IDENTITY_QUARANTINE, ["key_type", "key", "reason", "profiles"]
    ).to_pylist()
    quarantined: dict[tuple[str, str], dict] = {}
    for row in sorted(quarantine, key=lambda r: r["profiles"] or 0):  # the largest count wins
        quarantined[(row["key_type"], row["key"])] = row
    edges = read_area(
        storage, IDENTITY_EDGES, ["profile_a", "profile_b", "key_type", "key", "weight"]
    )
    if master_a == master_b:
        inside = _profiles_of(edges, "profile_a", side_a)
        inside = inside.filter(pc.greater_equal(inside["weight"], threshold))
        trusted = [
            (kind, key) not in quarantined
            for kind, key in zip(
                inside["key_type"].to_pylist(), inside["key"].to_pylist(), strict=True
            )
        ]
        chain = _chain(inside.filter(pa.array(trusted, pa.bool_())), a, b)
        if chain is not None:
            hops = len(chain)
            detail = f"one person (master {master_a}), linked in {hops} hop{'s' * (hops != 1)}"
            return LinkExplanation(a, b, True, chain, None, detail)
        return LinkExplanation(
            a,
            b,
            True,
            [],
            NOT_IN_COMPONENTS,
            f"one person (master {master_a}) in the latest components, but no edge the "
            "components trust links them any more: run identity_components again",
        )

    keys = read_area(storage, IDENTITY_KEYS, ["key_type", "key", "profile"])
    rows = {
        (row["profile"], row["key_type"], row["key"])
        for row in _profiles_of(keys, "profile", side_a | side_b).to_pylist()
    }
    shared = _keys_shared(rows, side_a, side_b)
    for (kind, key), (one, other) in shared.items():
        stats = quarantined.get((kind, key))
        if stats is None:
            continue
        shown = f"{kind} {shown_key(kind, key)} of {one} and {other}"
        if stats["reason"] == REASON_SUPER_NODE:
            return unlinked(
                QUARANTINED,
                f"shared key {shown} is quarantined as a super node: "
                f"{stats['profiles']} profiles carry it "
                f"(max_profiles_per_key {rules.max_profiles_per_key})",
            )
        if stats["reason"] == REASON_BLOCKLIST:
            return unlinked(QUARANTINED, f"shared key {shown} is a blocklisted placeholder value")
    bridging = set(rules.key_types)
    weights = {
        (row["key_type"], row["key"]): float(row["weight"])
        for row in _profiles_of(edges, "profile_a", side_a | side_b).to_pylist()
    }
    for (kind, key), (one, other) in shared.items():
        if kind not in bridging:
            continue
        weight = weights.get((kind, key), rules.weight_of(kind))
        if weight < threshold:
            return unlinked(
                BELOW_THRESHOLD,
                f"shared key {kind} {shown_key(kind, key)} of {one} and {other} makes edges of "
                f"weight {weight:g}, below the components' threshold {threshold:g}",
            )
    for (kind, key), (one, other) in shared.items():
        if kind not in bridging:
            return _not_bridging(a, b, kind, key, one, other, rules)
    if shared:
        (kind, key), (one, other) = next(iter(shared.items()))
        return unlinked(
            NOT_IN_COMPONENTS,
            f"shared key {kind} {shown_key(kind, key)} of {one} and {other} is not in the "
            "latest components yet: run identity_components for the later days",
        )
    alternates = _alt_ids_of(storage, side_a | side_b)
    for (kind, key), (one, other) in _keys_shared(alternates, side_a, side_b).items():
        if kind not in bridging:
            return _not_bridging(a, b, kind, key, one, other, rules)
    return unlinked(
        NO_SHARED_KEY,
        f"no shared key: no profile of {a}'s component ({len(side_a)} profiles) shares a login "
        f"or an alternate id with one of {b}'s ({len(side_b)} profiles)",
    )


def _not_bridging(
    a: str, b: str, kind: str, key: str, one: str, other: str, rules: BridgingRules
) -> LinkExplanation:
    bridging = ", ".join(rules.bridging_alt_id_kinds) or "none"
    return LinkExplanation(
        a,
        b,
        False,
        [],
        NON_BRIDGING_KIND,
        f"{one} and {other} share {kind} {shown_key(kind, key)}, but {kind} is not a bridging "
        f"kind (bridging: {bridging}); add it to the identity configuration",
    )
