"""One day of well-formed events as a columnar pyarrow table, built without per-event Python.

Who is active (returning and new persons), how much each sends (heavy-tailed), on which
device and app, when (a diurnal curve), and which identity hints ride along are all drawn
as whole numpy columns; strings are gathered from per-device and vocabulary arrays.
"""

from __future__ import annotations

from datetime import UTC, date, datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.generator import catalog
from profile_store.generator.arrow_strings import take, uuid_strings
from profile_store.generator.attributes import event_attributes
from profile_store.generator.identity_noise import NoiseLedger, inject_member_noise
from profile_store.generator.population import EVENTS_PER_ACTIVE_PERSON, Population

STREAM_DAY = 10
DAILY_ACTIVITY_SIGMA = 0.5  # day-to-day variation of a person's activity
CARRIER_NAT_SHARE = 0.3  # mobile events seen from a carrier NAT address, not the household
DAY_MS = 86_400_000
HOUR_MS = 3_600_000
# Diurnal curve over UTC hours: quiet around 08:00, busiest around 20:00.
HOUR_WEIGHTS = 1.0 + 0.6 * np.cos(2 * np.pi * (np.arange(24) - 20) / 24)

GROUPS: list[tuple[int, str]] = [
    (app_index, event_type)
    for app_index, app in enumerate(catalog.APPS)
    for event_type in app.event_mix
]
GROUP_EVENT_TYPES = pa.array([event_type for _, event_type in GROUPS], type=pa.string())
APP_IDS = pa.array([app.app_id for app in catalog.APPS], type=pa.string())
ID_TYPE_NAMES = pa.array(catalog.ID_TYPES, type=pa.string())

EVENT_SCHEMA = pa.schema(
    [
        ("event_id", pa.string()),
        ("app_id", pa.string()),
        ("user_id", pa.dictionary(pa.int32(), pa.string())),  # see _per_device
        ("id_type", pa.string()),
        ("event_time", pa.timestamp("ms", tz="UTC")),
        ("event_type", pa.string()),
        ("event_attributes", pa.string()),  # a JSON object, already serialized
        ("member_id", pa.string()),
        ("email_sha256", pa.string()),
        ("ip", pa.string()),
        ("user_agent", pa.dictionary(pa.int32(), pa.string())),
        ("device", pa.int64()),  # population device index (ground truth only, never written)
        ("own_login", pa.bool_()),  # member_id is the person's real login (ground truth only)
    ]
)


def day_start_ms(day: date) -> int:
    """Epoch milliseconds of a UTC midnight."""
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()) * 1000


def active_persons(
    population: Population,
    day: int,
    events_per_day: int,
    rng: np.random.Generator,
    events_per_person: float = EVENTS_PER_ACTIVE_PERSON,
) -> np.ndarray:
    """Today's new cohort plus returning persons, the engaged ones more likely to return."""
    first_day = population.first_day
    new = np.flatnonzero(first_day == day)
    old = np.flatnonzero(first_day < day)
    target = max(0, int(events_per_day / events_per_person) - len(new))
    if len(old) == 0 or target == 0:
        return new
    engagement = np.sqrt(population.activity[old])
    scale = target / engagement.sum()
    for _ in range(4):  # re-scale so capped probabilities still sum to the target
        probability = np.minimum(1.0, scale * engagement)
        scale *= target / max(probability.sum(), 1e-9)
    probability = np.minimum(1.0, scale * engagement)
    returning = old[rng.random(len(old)) < probability]
    return np.concatenate([returning, new])


def day_events(
    population: Population,
    day: int,
    date_: date,
    events_per_day: int,
    seed: int,
    ledger: NoiseLedger,
    events_per_person: float = EVENTS_PER_ACTIVE_PERSON,
) -> pa.Table:
    """The day's events, sorted by event time (see EVENT_SCHEMA)."""
    rng = np.random.default_rng([seed, STREAM_DAY, day])
    n = events_per_day
    install = _sample_installations(population, day, n, rng, events_per_person)
    event_ms = day_start_ms(date_) + _time_of_day_ms(rng, n)
    order = np.argsort(event_ms, kind="stable")
    install, event_ms = install[order], event_ms[order]

    app = population.install_app[install]
    device = population.install_device[install]
    person = population.device_person[device]
    group = _event_groups(app, rng)

    own_login = rng.random(n) < population.login_rate[device]
    member = pc.if_else(
        pa.array(own_login), take(population.member_id, person), pa.scalar(None, pa.string())
    )
    member = inject_member_noise(member, device, rng, ledger)
    own_login &= np.asarray(
        pc.fill_null(pc.equal(member, take(population.member_id, person)), False)
    )
    carries_email = rng.random(n) < population.email_rate[device]
    email = pc.if_else(
        pa.array(carries_email), take(population.email_sha256, person), pa.scalar(None, pa.string())
    )

    id_type = population.id_type[device]
    behind_nat = (id_type != catalog.COOKIE) & (rng.random(n) < CARRIER_NAT_SHARE)
    carrier_ip = take(population.carrier_ips, rng.integers(0, len(population.carrier_ips), n))
    ip = pc.if_else(pa.array(behind_nat), carrier_ip, take(population.ip, device))

    return pa.Table.from_arrays(
        [
            uuid_strings(rng, n),
            take(APP_IDS, app),
            _per_device(population.user_id, device),
            take(ID_TYPE_NAMES, id_type),
            pa.array(event_ms, type=pa.timestamp("ms", tz="UTC")),
            take(GROUP_EVENT_TYPES, group),
            event_attributes(group, GROUPS, event_ms, device, rng, seed),
            member,
            email,
            ip,
            _per_device(population.user_agent, device),
            pa.array(device, type=pa.int64()),
            pa.array(own_login),
        ],
        schema=EVENT_SCHEMA,
    )


def _per_device(values: pa.StringArray, device: np.ndarray) -> pa.DictionaryArray:
    """A device's string for each event, without a copy per event (a large day would hold
    its user agents once per event); landing lines decode it a part at a time."""
    return pa.DictionaryArray.from_arrays(pa.array(device, type=pa.int32()), values)


def _sample_installations(
    population: Population,
    day: int,
    n: int,
    rng: np.random.Generator,
    events_per_person: float,
) -> np.ndarray:
    """Which (device, app) sends each event: persons by heavy-tailed activity, then share."""
    active = active_persons(population, day, n, rng, events_per_person)
    daily = np.zeros(population.n_persons)
    daily[active] = population.activity[active] * rng.lognormal(
        0.0, DAILY_ACTIVITY_SIGMA, len(active)
    )
    weight = daily[population.install_person] * population.install_share
    candidates = np.flatnonzero(weight > 0)
    probability = weight[candidates] / weight[candidates].sum()
    return candidates[rng.choice(len(candidates), size=n, p=probability)]


def _time_of_day_ms(rng: np.random.Generator, n: int) -> np.ndarray:
    hour = rng.choice(24, size=n, p=HOUR_WEIGHTS / HOUR_WEIGHTS.sum())
    return hour * HOUR_MS + rng.integers(0, HOUR_MS, n)


def _event_groups(app: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each event's (app, event type) group, drawn from the app's event mix."""
    group = np.empty(len(app), dtype=np.int64)
    offset = 0
    for app_index, spec in enumerate(catalog.APPS):
        rows = np.flatnonzero(app == app_index)
        weights = np.array(list(spec.event_mix.values()))
        group[rows] = offset + rng.choice(len(weights), size=len(rows), p=weights / weights.sum())
        offset += len(weights)
    return group
