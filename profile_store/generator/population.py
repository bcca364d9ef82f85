"""Simulated people: persons own 1 to 5 devices/cookies, which use some apps.

Persons arrive in daily cohorts, each drawn from its own random stream, so day ``d`` of a
run never depends on how many days follow it. Identity hints (login, hashed email, household
IP, user-agent family) are decided here, per person and per device, so that the identity
graph has a real answer to find (see ``ground_truth``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.generator import catalog
from profile_store.generator.arrow_strings import hex_strings, int_strings, take, uuid_strings

STREAM_COHORT = 1
STREAM_IDS = 2

DEVICES_PER_PERSON = np.array([1, 2, 3, 4, 5])
DEVICES_PER_PERSON_P = np.array([0.42, 0.28, 0.16, 0.09, 0.05])
PARETO_SHAPE = 1.2  # heavy-tailed activity: a few persons send a large share of events
ACTIVITY_CAP = 400.0
MEMBER_SHARE = 0.35
LOGIN_DEVICE_SHARE = 0.6
EMAIL_SHARE_MEMBERS = 0.8
EMAIL_SHARE_OTHERS = 0.2
EMAIL_DEVICE_SHARE = 0.4
IOS_SHARE = 0.4
EXTRA_DEVICE_COOKIE_SHARE = 0.65
SAME_HOUSEHOLD_SHARE = 0.05  # unrelated persons behind one /24 (flatmates, families)
ECOSYSTEM_BROWSER_SHARE = 0.7
CARRIER_IPS = 256
EVENTS_PER_ACTIVE_PERSON = 8.0  # mean events of a person active on a day (the default traffic)
_MEMBER_MULTIPLIER = 387_420_489  # coprime with 10: index -> 9-digit member number is 1-to-1


@dataclass(frozen=True)
class Population:
    """Persons, devices and (device, app) installations, as parallel columnar arrays."""

    person_id: pa.StringArray
    first_day: np.ndarray
    activity: np.ndarray
    member_id: pa.StringArray  # null: the person never logs in
    email_sha256: pa.StringArray  # null: no known email
    device_person: np.ndarray
    user_id: pa.StringArray
    id_type: np.ndarray  # index into catalog.ID_TYPES
    ip: pa.StringArray
    user_agent: pa.StringArray
    login_rate: np.ndarray  # share of the device's events carrying member_id (0: never)
    email_rate: np.ndarray  # share of the device's events carrying alt_ids.email_sha256
    install_device: np.ndarray
    install_app: np.ndarray  # index into catalog.APPS
    install_share: np.ndarray  # the installation's share of its person's events
    carrier_ips: pa.StringArray  # public IPs of carrier NAT, shared by unrelated mobiles

    @property
    def n_persons(self) -> int:
        return len(self.first_day)

    @property
    def n_devices(self) -> int:
        return len(self.device_person)

    @property
    def install_person(self) -> np.ndarray:
        return self.device_person[self.install_device]


def cohort_sizes(
    events_per_day: int, days: int, events_per_person: float = EVENTS_PER_ACTIVE_PERSON
) -> list[int]:
    """Persons first seen each day: a base pool on day 0, then a quarter of it per day.

    About events_per_day / events_per_person persons are active per day (see
    ``events.active_persons``), so the pool grows over the run and multi-day unique users stay
    below the sum of daily ones. Fewer events per person means more persons for the same
    events: more users per app and day, which is what puts a day's sketches past their capacity.
    """
    base = max(10, int(events_per_day / events_per_person))
    return [base] + [max(3, base // 4)] * (days - 1)


def build_population(seed: int, sizes: list[int]) -> Population:
    """All cohorts of a run, concatenated; person and device indices are global."""
    ids_rng = np.random.default_rng([seed, STREAM_IDS])
    member_offset = int(ids_rng.integers(0, 10**9))
    parts = []
    person_offset = 0
    for day, size in enumerate(sizes):
        rng = np.random.default_rng([seed, STREAM_COHORT, day])
        parts.append(_cohort(rng, day, size, person_offset, member_offset))
        person_offset += size
    device_offsets = np.cumsum([0] + [len(part["device_person"]) for part in parts[:-1]])
    person_offsets = np.cumsum([0] + sizes[:-1])

    def cat(name: str) -> np.ndarray:
        return np.concatenate([part[name] for part in parts])

    def cat_arrow(name: str) -> pa.Array:
        return pa.concat_arrays([part[name] for part in parts])

    def cat_shifted(name: str, offsets: np.ndarray) -> np.ndarray:
        """Indices local to each cohort, shifted to index the whole population."""
        shifted = [part[name] + offset for part, offset in zip(parts, offsets, strict=True)]
        return np.concatenate(shifted)

    return Population(
        person_id=cat_arrow("person_id"),
        first_day=cat("first_day"),
        activity=cat("activity"),
        member_id=cat_arrow("member_id"),
        email_sha256=cat_arrow("email_sha256"),
        device_person=cat_shifted("device_person", person_offsets),
        user_id=cat_arrow("user_id"),
        id_type=cat("id_type"),
        ip=cat_arrow("ip"),
        user_agent=cat_arrow("user_agent"),
        login_rate=cat("login_rate"),
        email_rate=cat("email_rate"),
        install_device=cat_shifted("install_device", device_offsets),
        install_app=cat("install_app"),
        install_share=cat("install_share"),
        carrier_ips=_carrier_ips(ids_rng),
    )


def _cohort(
    rng: np.random.Generator, day: int, size: int, person_offset: int, member_offset: int
) -> dict:
    """One day's new persons with their devices and installations (local indices)."""
    global_index = np.arange(person_offset, person_offset + size, dtype=np.int64)
    activity = np.minimum(rng.pareto(PARETO_SHAPE, size) + 1.0, ACTIVITY_CAP)
    is_ios = rng.random(size) < IOS_SHARE
    has_member = rng.random(size) < MEMBER_SHARE
    email_share = np.where(has_member, EMAIL_SHARE_MEMBERS, EMAIL_SHARE_OTHERS)
    has_email = rng.random(size) < email_share

    member_numbers = (global_index * _MEMBER_MULTIPLIER + member_offset) % 10**9
    member_id = pc.binary_join_element_wise("mbr-", int_strings(member_numbers, 9), "")
    member_id = pc.if_else(pa.array(has_member), member_id, pa.scalar(None, pa.string()))
    email = pc.if_else(
        pa.array(has_email), hex_strings(rng, size, 32), pa.scalar(None, pa.string())
    )

    apps = _person_apps(rng, size)
    devices = _devices(rng, size, is_ios, has_member, has_email)
    device_weight = devices.pop("device_weight")
    installs = _installations(
        rng, devices["device_person"], devices["id_type"], device_weight, apps
    )
    return {
        "person_id": pc.binary_join_element_wise("P", int_strings(global_index, 8), ""),
        "first_day": np.full(size, day, dtype=np.int32),
        "activity": activity,
        "member_id": member_id,
        "email_sha256": email,
        **devices,
        **installs,
    }


def _person_apps(rng: np.random.Generator, size: int) -> np.ndarray:
    """Which apps each person uses (at least one, chosen by popularity)."""
    popularity = np.array([app.popularity for app in catalog.APPS])
    uses = rng.random((size, len(popularity))) < popularity
    none = ~uses.any(axis=1)
    fallback = rng.choice(len(popularity), size=int(none.sum()), p=popularity / popularity.sum())
    uses[np.flatnonzero(none), fallback] = True
    return uses


def _devices(
    rng: np.random.Generator,
    size: int,
    is_ios: np.ndarray,
    has_member: np.ndarray,
    has_email: np.ndarray,
) -> dict:
    """Devices of the cohort: the phone first, then cookies and tablets."""
    per_person = rng.choice(DEVICES_PER_PERSON, size=size, p=DEVICES_PER_PERSON_P)
    person = np.repeat(np.arange(size), per_person)
    n = len(person)
    first = np.concatenate([[0], np.cumsum(per_person)[:-1]])
    rank = np.arange(n) - first[person]

    phone = np.where(is_ios[person], catalog.IDFA, catalog.GAID)
    tablet = np.where(rng.random(n) < 0.5, catalog.IDFA, catalog.GAID)
    extra = np.where(rng.random(n) < EXTRA_DEVICE_COOKIE_SHARE, catalog.COOKIE, tablet)
    id_type = np.where(rank == 0, phone, extra).astype(np.int8)

    user_id = _user_ids(rng, id_type)
    logs_in = has_member[person] & (rng.random(n) < LOGIN_DEVICE_SHARE)
    carries = has_email[person] & (rng.random(n) < EMAIL_DEVICE_SHARE)
    weight = np.where(rank == 0, 1.0, rng.uniform(0.1, 0.6, n))
    return {
        "device_person": person,
        "device_weight": weight,
        "user_id": user_id,
        "id_type": id_type,
        "ip": _household_ips(rng, size, person),
        "user_agent": _user_agents(rng, id_type, is_ios, person),
        "login_rate": np.where(logs_in, rng.uniform(0.2, 0.8, n), 0.0).astype(np.float32),
        "email_rate": np.where(carries, rng.uniform(0.2, 0.8, n), 0.0).astype(np.float32),
    }


def _user_ids(rng: np.random.Generator, id_type: np.ndarray) -> pa.Array:
    """IDFA (upper-case UUID), GAID (lower-case UUID) and web cookies (GA-style)."""
    n = len(id_type)
    idfa = uuid_strings(rng, n, upper=True)
    gaid = uuid_strings(rng, n)
    cookie = pc.binary_join_element_wise(
        int_strings(rng.integers(10**9, 10**10, n)),
        int_strings(rng.integers(1_700_000_000, 1_790_000_000, n)),
        ".",
    )
    ids = pc.if_else(pa.array(id_type == catalog.IDFA), idfa, gaid)
    return pc.if_else(pa.array(id_type == catalog.COOKIE), cookie, ids)


def _household_ips(rng: np.random.Generator, size: int, person: np.ndarray) -> pa.Array:
    """Devices of a person share a /24; a few unrelated persons share one too."""
    prefix = np.stack(
        [
            rng.choice(catalog.HOUSEHOLD_FIRST_OCTETS, size),
            rng.integers(0, 256, size),
            rng.integers(0, 256, size),
        ],
        axis=1,
    )
    shared = np.flatnonzero(rng.random(size) < SAME_HOUSEHOLD_SHARE)
    prefix[shared] = prefix[rng.integers(0, size, len(shared))]
    octets = prefix[person]
    last = rng.integers(2, 255, len(person))
    return pc.binary_join_element_wise(
        int_strings(octets[:, 0]),
        int_strings(octets[:, 1]),
        int_strings(octets[:, 2]),
        int_strings(last),
        ".",
    )


def _carrier_ips(rng: np.random.Generator) -> pa.Array:
    """A small pool of carrier-grade NAT addresses: many unrelated phones behind each."""
    octets = (
        [rng.choice(catalog.CARRIER_FIRST_OCTETS, CARRIER_IPS)]
        + [rng.integers(0, 256, CARRIER_IPS) for _ in range(2)]
        + [rng.integers(1, 255, CARRIER_IPS)]
    )
    return pc.binary_join_element_wise(*[int_strings(octet) for octet in octets], ".")


def _user_agents(
    rng: np.random.Generator, id_type: np.ndarray, is_ios: np.ndarray, person: np.ndarray
) -> pa.Array:
    """App UAs by platform; browsers mostly from the person's ecosystem, often identical."""
    families = (
        catalog.ANDROID_APP_UAS,
        catalog.IOS_APP_UAS,
        catalog.ANDROID_WEB_UAS,
        catalog.APPLE_WEB_UAS,
        catalog.ANDROID_WEB_UAS + catalog.APPLE_WEB_UAS + catalog.OTHER_WEB_UAS,
    )
    vocabulary = pa.array([ua for family in families for ua in family], type=pa.string())
    starts = np.cumsum([0] + [len(family) for family in families[:-1]])
    lengths = np.array([len(family) for family in families])

    n = len(id_type)
    person_pick = rng.random(len(is_ios))[person]
    device_pick = rng.random(n)
    ecosystem = np.where(is_ios[person], 3, 2)
    in_ecosystem = rng.random(n) < ECOSYSTEM_BROWSER_SHARE
    family = np.select(
        [id_type == catalog.GAID, id_type == catalog.IDFA, in_ecosystem],
        [0, 1, ecosystem],
        default=4,
    )
    pick = np.where(in_ecosystem | (id_type != catalog.COOKIE), person_pick, device_pick)
    index = starts[family] + (pick * lengths[family]).astype(np.int64)
    return take(vocabulary, index)


def _installations(
    rng: np.random.Generator,
    person: np.ndarray,
    id_type: np.ndarray,
    device_weight: np.ndarray,
    apps: np.ndarray,
) -> dict:
    """(device, app) pairs: the person's apps that run on the device's id type."""
    compatible = np.zeros((len(catalog.ID_TYPES), len(catalog.APPS)), dtype=bool)
    for app_index, spec in enumerate(catalog.APPS):
        compatible[list(spec.id_types), app_index] = True
    uses = apps[person] & compatible[id_type]
    uses[~uses.any(axis=1), catalog.FALLBACK_APP] = True
    device, app = np.nonzero(uses)

    app_affinity = rng.gamma(1.0, 1.0, size=apps.shape) + 0.05
    weight = device_weight[device] * app_affinity[person[device], app]
    totals = np.bincount(person[device], weights=weight, minlength=apps.shape[0])
    return {
        "install_device": device.astype(np.int64),
        "install_app": app.astype(np.int8),
        "install_share": weight / totals[person[device]],
    }
