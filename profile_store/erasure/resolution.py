"""From the ids a requester gives to the person: exactly the links the identity graph trusts.

The identity graph links two profiles by an edge of a key they share (``identity_edges``) and
trusts it when its weight reaches the components' threshold and its key was never quarantined
(``identity_quarantine``: a blocklisted placeholder such as ``0`` or the empty string, or a
super-node such as a login shared by more profiles than the guard allows): the edges
``surviving_edges`` gives ``identity_components``. Resolution walks those edges on the same data
with Arrow (no Spark, so a request takes effect in seconds):

- a login (``member_id``) edge is one account: followed;
- an alternate-id edge (a hashed email) is followed unless the profiles carrying that id carried
  two logins or more: such an id is evidence BETWEEN accounts, how one person bridges two
  others' components, and those others are not forgotten with them (their component splits
  when the person's edges go). A property of the id, not of where the walk started, so every
  device of a person resolves to the same profiles;
- a quarantined key is never followed, suppressed or deleted: it identifies no one. A request
  naming one is refused.

The person's keys (the lookup rows to delete, the logins and own alternate ids to suppress) are
their clean keys only. A resolution of more than ``max_profiles`` profiles is refused before
anything is written: hundreds of profiles behind one id is an over-linking graph, not a person.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from profile_store.erasure.requests import (
    DEFAULT_MAX_PROFILES,
    PROFILE_ID,
    ErasureRefused,
    GivenId,
)
from profile_store.events.id_case import USER_ID_CASE, case_of, normalize_id
from profile_store.identity.pipeline import latest_assignment_dir
from profile_store.identity.rules import DEFAULT_BLOCKLIST, FUZZY_IP_UA, MEMBER_ID
from profile_store.lake.arrow_areas import read_area
from profile_store.lake.layout import (
    IDENTITY_EDGES,
    IDENTITY_KEYS,
    IDENTITY_PROFILES,
    IDENTITY_QUARANTINE,
)
from profile_store.lake.storage import LakeStorage

DEFAULT_WEIGHT_THRESHOLD = 0.9
"""The components' default threshold (``identity_components``, ``CompactionConfig``)."""

_UUID = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")

Key = tuple[str, str]  # (key type, key)


@dataclass(frozen=True)
class Person:
    """Everything of one person the identity graph knows, and the components they were in."""

    profiles: frozenset[str]  # device and cookie ids (the events' user_id)
    keys: frozenset[Key]  # their clean keys (and the keys the requester named)
    logins: frozenset[str]  # their clean member_ids: suppressed with the profiles
    own_alternates: frozenset[Key]  # their clean alternate ids of one account: suppressed
    given_keys: frozenset[Key]  # keys the requester named: suppressed too
    known: bool  # any of the profiles or given keys is in the lake
    edges: frozenset[tuple[str, str]]  # (a, b) pairs with one end in the person
    component_members: frozenset[str]  # the others of their latest components
    spellings: frozenset[str] = frozenset()  # their ids in every spelling ingest may meet
    quarantined: frozenset[Key] = frozenset()  # keys they carried that were not followed

    @property
    def suppressed_ids(self) -> set[str]:
        given = (key for _, key in self.given_keys)
        ids = {
            *self.profiles,
            *self.spellings,
            *self.logins,
            *(key for _, key in self.own_alternates),
            *given,
        }
        return {value for value in ids if value}


def _strings(values) -> pa.Array:
    return pa.array(sorted(values), pa.string())


def _distinct(table: pa.Table) -> pa.Table:
    return table.group_by(table.column_names, use_threads=False).aggregate([])


def _in(table: pa.Table, column: str, values) -> pa.Table:
    return table.filter(pc.is_in(table[column], _strings(values)))


def _pairs(table: pa.Table, first: str = "key_type", second: str = "key") -> set[Key]:
    return set(zip(table[first].to_pylist(), table[second].to_pylist(), strict=True))


def _clean(table: pa.Table, quarantine: pa.Table) -> pa.Table:
    """Rows whose key was never quarantined (nor empty, nor the fuzzy rule's)."""
    addressable = table.filter(
        pc.and_(
            pc.greater(pc.utf8_length(table["key"]), 0),
            pc.not_equal(table["key_type"], FUZZY_IP_UA),
        )
    )
    if quarantine.num_rows == 0:
        return addressable
    return addressable.join(quarantine, ["key_type", "key"], join_type="left anti")


def _carriers(keys: pa.Table, wanted: set[Key]) -> dict[Key, set[str]]:
    """The profiles that carried each of ``wanted`` (only keys some profile carried)."""
    rows = _in(keys, "key", {key for _, key in wanted})
    found: dict[Key, set[str]] = {}
    for kind, key, profile in zip(
        rows["key_type"].to_pylist(),
        rows["key"].to_pylist(),
        rows["profile"].to_pylist(),
        strict=True,
    ):
        if (kind, key) in wanted:
            found.setdefault((kind, key), set()).add(profile)
    return found


def _bridging_alternates(clean_keys: pa.Table) -> set[Key]:
    """Alternate ids whose profiles carried two logins or more: evidence between accounts."""
    logins = clean_keys.filter(pc.equal(clean_keys["key_type"], MEMBER_ID))
    alternates = clean_keys.filter(pc.not_equal(clean_keys["key_type"], MEMBER_ID))
    paired = alternates.join(
        logins.select(["profile", "key"]).rename_columns(["profile", "login"]), "profile"
    )
    counted = paired.group_by(["key_type", "key"], use_threads=False).aggregate(
        [("login", "count_distinct")]
    )
    return _pairs(counted.filter(pc.greater_equal(counted["login_count_distinct"], 2)))


class IdentityGraph:
    """The identity areas of the lake, read once, as the components trust them.

    ``resolve`` can then be called for any number of requests (the erasure step resolves each
    pending request; a test resolves every device of a lake) without reading the lake again.
    """

    def __init__(
        self,
        keys: pa.Table,
        edges: pa.Table,
        quarantine: pa.Table,
        id_types: dict[str, str],
        assignment: pa.Table | None,
        threshold: float = DEFAULT_WEIGHT_THRESHOLD,
    ) -> None:
        """``edges``: every edge (its HBase rows are deleted whatever its weight); only those
        of ``threshold`` or more are followed, as the components use only those."""
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        self._quarantined = _pairs(quarantine)
        self._keys = _distinct(keys)
        self._clean_keys = _clean(self._keys, quarantine)
        self._all_edges = edges.select(["profile_a", "profile_b"])
        self._bridging = _bridging_alternates(self._clean_keys)
        if edges.num_rows:
            edges = edges.filter(pc.greater_equal(edges["weight"], threshold))
        trusted = _clean(edges, quarantine)
        followed = [
            kind == MEMBER_ID or (kind, key) not in self._bridging
            for kind, key in zip(
                trusted["key_type"].to_pylist(), trusted["key"].to_pylist(), strict=True
            )
        ]
        self._links = trusted.filter(pa.array(followed, pa.bool_())).select(
            ["profile_a", "profile_b"]
        )
        self._id_types = id_types
        self._assignment = assignment

    @classmethod
    def load(
        cls, storage: LakeStorage, threshold: float = DEFAULT_WEIGHT_THRESHOLD
    ) -> IdentityGraph:
        keys = read_area(storage, IDENTITY_KEYS, ["key_type", "key", "profile"])
        edges = read_area(
            storage, IDENTITY_EDGES, ["profile_a", "profile_b", "key_type", "key", "weight"]
        )
        quarantine = _distinct(read_area(storage, IDENTITY_QUARANTINE, ["key_type", "key"]))
        profiles = read_area(storage, IDENTITY_PROFILES, ["profile", "id_type"])
        id_types = dict(
            zip(profiles["profile"].to_pylist(), profiles["id_type"].to_pylist(), strict=True)
        )
        latest = latest_assignment_dir(storage)
        assignment = read_area(storage, latest, ["profile", "master"]) if latest else None
        return cls(keys, edges, quarantine, id_types, assignment, threshold)

    # -- the ids given ---------------------------------------------------------------------

    def _profile_spellings(self, value: str) -> set[str]:
        """The lake's spelling of a given device id: an IDFA is stored upper-case and a GAID
        lower-case, whatever the requester typed; a cookie as it is."""
        found = {value} if value in self._id_types else set()
        for kind in USER_ID_CASE:
            spelled = normalize_id(kind, value)
            if self._id_types.get(spelled) == kind:
                found.add(spelled)
        return found or {value}

    def _seeds(self, given: list[GivenId]) -> tuple[set[str], set[Key], set[str]]:
        """(profiles to start from, keys named, extra spellings to suppress)."""
        profiles: set[str] = set()
        given_keys: set[Key] = set()
        spellings: set[str] = set()
        for item in given:
            if item.key_type == PROFILE_ID:
                profiles |= self._profile_spellings(item.id)
                spellings.add(item.id)
                if _UUID.match(item.id) and item.id not in self._id_types:
                    # Unknown yet: an IDFA or a GAID arrives in one of two spellings.
                    spellings |= {item.id.upper(), item.id.lower()}
                continue
            key = (item.key_type, normalize_id(item.key_type, item.id))
            if key in self._quarantined or key[1].strip().lower() in DEFAULT_BLOCKLIST:
                count = len(_carriers(self._keys, {key}).get(key, ()))
                raise ErasureRefused(
                    f"ids: {key[0]} {key[1]!r} is quarantined by the identity graph (a "
                    f"placeholder or a key shared by {count} profiles): it identifies no one "
                    "person; name the person's device or cookie ids instead"
                )
            given_keys.add(key)
        for carriers in _carriers(self._clean_keys, given_keys).values():
            profiles |= carriers
        return profiles, given_keys, spellings

    # -- the walk ----------------------------------------------------------------------------

    def _walk(self, profiles: set[str]) -> set[str]:
        """Every profile the followed links reach from ``profiles``."""
        while True:
            person = _strings(profiles)
            touching = self._links.filter(
                pc.or_(
                    pc.is_in(self._links["profile_a"], person),
                    pc.is_in(self._links["profile_b"], person),
                )
            )
            reached = profiles | set(touching["profile_a"].to_pylist())
            reached |= set(touching["profile_b"].to_pylist())
            if reached == profiles:
                return profiles
            profiles = reached

    def resolve(self, given: list[GivenId], max_profiles: int = DEFAULT_MAX_PROFILES) -> Person:
        """The person of ``given`` (see the module docstring); ``ErasureRefused`` when a given
        key is quarantined or the person has more than ``max_profiles`` profiles."""
        seeds, given_keys, spellings = self._seeds(given)
        profiles = self._walk(seeds)
        if len(profiles) > max_profiles:
            raise ErasureRefused(
                f"ids: resolve to {len(profiles)} profiles through the identity graph, more "
                f"than the bound of {max_profiles} (--max-profiles, max_profiles, "
                "PROFILES_ERASURE_MAX_PROFILES). Check the ids, or raise the bound for this "
                "request if that many profiles really are one person"
            )
        held = _in(self._keys, "profile", profiles)
        carried = _pairs(held)
        clean = _pairs(_in(self._clean_keys, "profile", profiles))
        for profile in profiles:
            if case_of(self._id_types.get(profile, "")) is not None:
                spellings |= {profile.upper(), profile.lower()}
        person = _strings(profiles)
        touching = self._all_edges.filter(
            pc.or_(
                pc.is_in(self._all_edges["profile_a"], person),
                pc.is_in(self._all_edges["profile_b"], person),
            )
        )
        keys = clean | given_keys
        own = {pair for pair in clean if pair[0] != MEMBER_ID and pair not in self._bridging}
        return Person(
            profiles=frozenset(profiles),
            keys=frozenset(keys),
            logins=frozenset(key for kind, key in keys if kind == MEMBER_ID),
            own_alternates=frozenset(own - given_keys),
            given_keys=frozenset(given_keys),
            known=bool(profiles & self._id_types.keys()) or bool(carried),
            edges=frozenset(_pairs(touching, "profile_a", "profile_b")),
            component_members=frozenset(self._component_members(profiles)),
            spellings=frozenset(spellings - profiles),
            quarantined=frozenset(p for p in carried if p in self._quarantined),
        )

    def _component_members(self, profiles: set[str]) -> set[str]:
        """The other members of the latest components that hold one of ``profiles``."""
        if self._assignment is None or not profiles:
            return set()
        mine = _in(self._assignment, "profile", profiles)
        members = _in(self._assignment, "master", set(mine["master"].to_pylist()))
        return set(members["profile"].to_pylist()) - profiles


def resolve(
    storage: LakeStorage,
    given: list[GivenId],
    max_profiles: int = DEFAULT_MAX_PROFILES,
    threshold: float = DEFAULT_WEIGHT_THRESHOLD,
) -> Person:
    """The person of ``given`` over the lake's identity areas as they are now."""
    return IdentityGraph.load(storage, threshold).resolve(given, max_profiles)


def union(persons: Iterable[Person]) -> Person:
    """The persons of a batch of requests as one, for the one lake rewrite they share; a
    profile forgotten by one request is no other member left to rewrite."""
    persons = list(persons)

    def joined(name: str) -> frozenset:
        return frozenset().union(*(getattr(person, name) for person in persons))

    profiles = joined("profiles")
    return Person(
        profiles=profiles,
        keys=joined("keys"),
        logins=joined("logins"),
        own_alternates=joined("own_alternates"),
        given_keys=joined("given_keys"),
        known=any(person.known for person in persons),
        edges=joined("edges"),
        component_members=joined("component_members") - profiles,
        spellings=joined("spellings") - profiles,
        quarantined=joined("quarantined"),
    )
