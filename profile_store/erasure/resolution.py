"""From the ids a requester gives to the person: their profiles, their keys, their neighbours.

The person is the ids given and every profile that shares a login (``member_id``: one account)
with one of them, transitively; a given login or alternate id (``--key-type``) brings every
profile that carried it. Weaker links (a shared hashed email, the fuzzy rule) are evidence
between persons: that is how one person bridges two others' components, and those others are
not forgotten with them (their component splits when the person's edges go).

Read with Arrow from the identity areas of the lake (no Spark), so that a request takes effect
in seconds: ``identity_keys`` (who carried which key), ``identity_profiles`` (who exists),
``identity_edges`` (the pairs to withdraw) and the latest ``identity_components``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import PurePosixPath

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from profile_store.erasure.requests import PROFILE_ID, GivenId
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.identity.rules import MEMBER_ID
from profile_store.lake_layout import IDENTITY_EDGES, IDENTITY_KEYS, IDENTITY_PROFILES
from profile_store.lake_storage import LakeStorage


@dataclass(frozen=True)
class Person:
    """Everything of one person the identity graph knows, and the components they were in."""

    profiles: frozenset[str]  # device and cookie ids (the events' user_id)
    keys: frozenset[tuple[str, str]]  # (key type, key) every one of them carried
    logins: frozenset[str]  # their member_ids: suppressed with the profiles
    given_keys: frozenset[tuple[str, str]]  # keys the requester named: suppressed too
    known: bool  # any of the profiles or given keys is in the lake
    edges: frozenset[tuple[str, str]]  # (a, b) pairs with one end in the person
    component_members: frozenset[str]  # the others of their latest components

    @property
    def suppressed_ids(self) -> set[str]:
        return {*self.profiles, *self.logins, *(key for _, key in self.given_keys)}


def read_area(storage: LakeStorage, relative: str, columns: list[str]) -> pa.Table:
    """Every Parquet file under ``relative`` (all days), ``columns`` only."""
    tables = []
    if storage.exists(relative):
        for entry in storage.list_files(relative):
            name = PurePosixPath(entry.path).name
            if name.endswith(".parquet") and not name.startswith(("_", ".")):
                data = storage.read_bytes(entry.path)
                tables.append(pq.read_table(io.BytesIO(data), columns=columns))
    if not tables:
        return pa.table({name: pa.array([], pa.string()) for name in columns})
    return pa.concat_tables(tables, promote_options="permissive")


def _strings(values) -> pa.Array:
    return pa.array(sorted(values), pa.string())


def _values(table: pa.Table, column: str) -> set[str]:
    return set(table.column(column).to_pylist())


def resolve(storage: LakeStorage, given: list[GivenId]) -> Person:
    """The person of ``given`` (see the module docstring)."""
    keys = read_area(storage, IDENTITY_KEYS, ["key_type", "key", "profile"])
    profiles = {g.id for g in given if g.key_type == PROFILE_ID}
    given_keys = {(g.key_type, g.id) for g in given if g.key_type != PROFILE_ID}
    wanted = set(given_keys)
    while True:
        by_key = keys.filter(pc.is_in(keys["key"], _strings(k for _, k in wanted)))
        found = {
            row["profile"] for row in by_key.to_pylist() if (row["key_type"], row["key"]) in wanted
        }
        held = keys.filter(pc.is_in(keys["profile"], _strings(profiles | found)))
        logins = {
            (MEMBER_ID, row["key"]) for row in held.to_pylist() if row["key_type"] == MEMBER_ID
        }
        if found <= profiles and logins <= wanted:
            break
        profiles |= found
        wanted |= logins
    held = keys.filter(pc.is_in(keys["profile"], _strings(profiles)))
    carried = {(row["key_type"], row["key"]) for row in held.to_pylist()}
    existing = read_area(storage, IDENTITY_PROFILES, ["profile"])
    known_profiles = _values(
        existing.filter(pc.is_in(existing["profile"], _strings(profiles))), "profile"
    )

    edges = read_area(storage, IDENTITY_EDGES, ["profile_a", "profile_b"])
    person = _strings(profiles)
    touching = edges.filter(
        pc.or_(pc.is_in(edges["profile_a"], person), pc.is_in(edges["profile_b"], person))
    )
    pairs = {(row["profile_a"], row["profile_b"]) for row in touching.to_pylist()}
    return Person(
        profiles=frozenset(profiles),
        keys=frozenset(carried | given_keys),
        logins=frozenset(key for kind, key in carried | given_keys if kind == MEMBER_ID),
        given_keys=frozenset(given_keys),
        known=bool(known_profiles) or bool(carried),
        edges=frozenset(pairs),
        component_members=frozenset(_component_members(storage, profiles)),
    )


def _component_members(storage: LakeStorage, profiles: set[str]) -> set[str]:
    """The other members of the latest components that hold one of ``profiles``."""
    latest = latest_assignment_dir(storage)
    if latest is None or not profiles:
        return set()
    assignment = read_area(storage, latest, ["profile", "master"])
    mine = assignment.filter(pc.is_in(assignment["profile"], _strings(profiles)))
    masters = _strings(_values(mine, "master"))
    members = assignment.filter(pc.is_in(assignment["master"], masters))
    return _values(members, "profile") - profiles
