"""Bridging keys injected on purpose so the identity graph's super-node guard has work to do.

Shared or test logins (``test``, ``guest``, ``demo_account``) are sent by more than 100
devices of unrelated persons every day, and placeholder values (``"0"``, ``"unknown"``,
``"null"``, ``""``) leak into ``member_id`` on a small share of events. Linking on either
would merge unrelated persons into one giant component.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.generator import catalog
from profile_store.generator.arrow_strings import take

SHARED_LOGIN_MIN_DEVICES = 110  # per login and day: comfortably above a 100-device guard
SHARED_LOGIN_DEVICE_SHARE = 0.0008  # of the day's events, when that is more than the minimum
SHARED_LOGIN_MAX_EVENT_SHARE = 0.05  # never let noise dominate a tiny day
SHARED_LOGIN_REUSE = 0.5  # chance a chosen device sends the login on its other events too
BLOCKLIST_EVENT_SHARE = 0.003

NOISE_VALUES = tuple(("shared_login", value) for value in catalog.SHARED_LOGINS) + tuple(
    ("blocklist", value) for value in catalog.BLOCKLIST_MEMBER_IDS
)


@dataclass
class NoiseLedger:
    """Which devices sent each noise value, and how often, accumulated over days."""

    devices: dict[str, list[np.ndarray]] = field(default_factory=dict)
    events: dict[str, int] = field(default_factory=dict)

    def record(self, value: str, device: np.ndarray) -> None:
        self.devices.setdefault(value, []).append(device)
        self.events[value] = self.events.get(value, 0) + len(device)

    def table(self) -> pa.Table:
        """One row per injected value: kind, value, distinct devices, events."""
        rows: dict[str, list] = {
            "key_type": [],
            "value": [],
            "kind": [],
            "devices": [],
            "events": [],
        }
        for kind, value in NOISE_VALUES:
            sent = self.devices.get(value, [])
            rows["key_type"].append("member_id")
            rows["value"].append(value)
            rows["kind"].append(kind)
            rows["devices"].append(len(np.unique(np.concatenate(sent))) if sent else 0)
            rows["events"].append(self.events.get(value, 0))
        return pa.table(rows)


def inject_member_noise(
    member_id: pa.Array, device: np.ndarray, rng: np.random.Generator, ledger: NoiseLedger
) -> pa.Array:
    """Overwrite ``member_id`` on some events with noise, recording it in ``ledger``.

    A fresh set of devices per shared login sends it on their first event of the day and on
    about half of the others; anonymous events occasionally carry a placeholder value.
    """
    n = len(device)
    value = np.full(n, -1, dtype=np.int64)
    anonymous = np.asarray(pc.is_null(member_id))

    day_devices = rng.permutation(np.unique(device))
    per_login = max(SHARED_LOGIN_MIN_DEVICES, int(n * SHARED_LOGIN_DEVICE_SHARE))
    per_login = min(
        per_login,
        int(n * SHARED_LOGIN_MAX_EVENT_SHARE / len(catalog.SHARED_LOGINS)),
        len(day_devices) // (2 * len(catalog.SHARED_LOGINS)),
    )
    if per_login > 0:
        chosen = np.full(device.max() + 1, -1, dtype=np.int64)
        for login_index in range(len(catalog.SHARED_LOGINS)):
            start = login_index * per_login
            chosen[day_devices[start : start + per_login]] = login_index
        login = chosen[device]
        _, first_event = np.unique(device, return_index=True)
        first = np.zeros(n, dtype=bool)
        first[first_event] = True
        sends = (login >= 0) & (first | (rng.random(n) < SHARED_LOGIN_REUSE))
        value[sends] = login[sends]

    placeholder = (value < 0) & anonymous & (rng.random(n) < BLOCKLIST_EVENT_SHARE)
    offset = len(catalog.SHARED_LOGINS)
    value[placeholder] = offset + rng.integers(
        0, len(catalog.BLOCKLIST_MEMBER_IDS), int(placeholder.sum())
    )

    noisy = value >= 0
    names = [name for _, name in NOISE_VALUES]
    for index, name in enumerate(names):
        ledger.record(name, device[value == index])
    replacement = take(pa.array(names, type=pa.string()), value[noisy])
    return pc.replace_with_mask(member_id, pa.array(noisy), replacement)
