"""From the ids a requester gives to the person: their profiles, their keys, their neighbours.

The person is the ids given (a profile id, or a login or alternate id with ``--key-type``: every
profile that carried it) and, transitively, every profile sharing one of their own keys: a login
(``member_id``: one account), or an alternate id such as a hashed email that no other account
carried. An alternate id seen under another login too, or a fuzzy link, is evidence BETWEEN
persons: that is how one person bridges two others' components, and those others are not
forgotten with them (their component splits when the person's edges go).

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
from profile_store.identity.rules import FUZZY_IP_UA, MEMBER_ID
from profile_store.lake_layout import IDENTITY_EDGES, IDENTITY_KEYS, IDENTITY_PROFILES
from profile_store.lake_storage import LakeStorage


@dataclass(frozen=True)
class Person:
    """Everything of one person the identity graph knows, and the components they were in."""

    profiles: frozenset[str]  # device and cookie ids (the events' user_id)
    keys: frozenset[tuple[str, str]]  # (key type, key) every one of them carried
    logins: frozenset[str]  # their member_ids: suppressed with the profiles
    own_alternates: frozenset[tuple[str, str]]  # alternate ids only they carried: suppressed
    given_keys: frozenset[tuple[str, str]]  # keys the requester named: suppressed too
    known: bool  # any of the profiles or given keys is in the lake
    edges: frozenset[tuple[str, str]]  # (a, b) pairs with one end in the person
    component_members: frozenset[str]  # the others of their latest components

    @property
    def suppressed_ids(self) -> set[str]:
        given = (key for _, key in self.given_keys)
        return {*self.profiles, *self.logins, *(key for _, key in self.own_alternates), *given}


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


def _rows(keys: pa.Table, column: str, values: set[str]) -> list[dict]:
    return keys.filter(pc.is_in(keys[column], _strings(values))).to_pylist()


def resolve(storage: LakeStorage, given: list[GivenId]) -> Person:
    """The person of ``given`` (see the module docstring)."""
    keys = read_area(storage, IDENTITY_KEYS, ["key_type", "key", "profile"])
    profiles = {g.id for g in given if g.key_type == PROFILE_ID}
    given_keys = {(g.key_type, g.id) for g in given if g.key_type != PROFILE_ID}
    wanted = set(given_keys)
    while True:
        found = {
            row["profile"]
            for row in _rows(keys, "key", {k for _, k in wanted})
            if (row["key_type"], row["key"]) in wanted
        }
        held = _rows(keys, "profile", profiles | found)
        logins = {(MEMBER_ID, r["key"]) for r in held if r["key_type"] == MEMBER_ID}
        alternates = {
            (r["key_type"], r["key"])
            for r in held
            if r["key_type"] not in (MEMBER_ID, FUZZY_IP_UA)
            and (r["key_type"], r["key"]) not in wanted
        }
        accepted = _own_alternates(
            keys, alternates, {key for kind, key in logins | wanted if kind == MEMBER_ID}
        )
        if found <= profiles and (logins | accepted) <= wanted:
            break
        profiles |= found
        wanted |= logins | accepted
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
        own_alternates=frozenset(k for k in wanted if k[0] != MEMBER_ID) - frozenset(given_keys),
        known=bool(known_profiles) or bool(carried),
        edges=frozenset(pairs),
        component_members=frozenset(_component_members(storage, profiles)),
    )


def _own_alternates(
    keys: pa.Table, alternates: set[tuple[str, str]], logins: set[str]
) -> set[tuple[str, str]]:
    """The alternate ids no other account carried: every profile carrying one has no login,
    or only the person's logins."""
    if not alternates:
        return set()
    carriers: dict[tuple[str, str], set[str]] = {}
    for row in _rows(keys, "key", {k for _, k in alternates}):
        pair = (row["key_type"], row["key"])
        if pair in alternates:
            carriers.setdefault(pair, set()).add(row["profile"])
    logins_of: dict[str, set[str]] = {}
    for row in _rows(keys, "profile", set().union(*carriers.values())):
        if row["key_type"] == MEMBER_ID:
            logins_of.setdefault(row["profile"], set()).add(row["key"])
    return {
        pair
        for pair, profiles in carriers.items()
        if all(logins_of.get(p, set()) <= logins for p in profiles)
    }


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
