"""Proof that a rebuilt sketch day no longer retains a forgotten person.

A theta sketch keeps hashes, not ids: Spark's ``theta_sketch_agg`` and
``tuple_sketch_agg_integer`` hash a ``user_id`` with MurmurHash3 (seed 9001) over its UTF-8
bytes, exactly as the ``datasketches`` package's ``update_theta_sketch.update(str)`` does. So
each of the person's ids has one 64-bit hash, and a sketch that retains it holds those 8 bytes
(little-endian) in its serialized entries. Every ``s:theta`` and ``s:counts`` cell of the day's
rows is searched for them: a row of other users matches a given hash by chance with probability
below 2^-52 (4,096 entries of 64 bits), so a match is a retained hash.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date

import numpy as np
from datasketches import update_theta_sketch

from profile_store.audiences.day_sketches import pairs_manifest
from profile_store.audiences.rowkey import SEPARATOR, day_component, encode_component
from profile_store.audiences.sketch_table import COUNTS, THETA
from profile_store.lake.storage import LakeStorage


def id_hashes(ids: Iterable[str]) -> set[bytes]:
    """The 8 bytes each id's hash has in a serialized sketch."""
    found: set[bytes] = set()
    for value in ids:
        sketch = update_theta_sketch()
        sketch.update(value)
        found.update(struct.pack("<Q", h) for h in sketch.compact())
    return found


@dataclass(frozen=True)
class Retention:
    rows_checked: int
    rows_retaining: int
    found: frozenset[bytes] = frozenset()  # the hashes some row retains
    examples: list[str] = field(default_factory=list)  # row keys: apps, events, attributes

    @property
    def clean(self) -> bool:
        return self.rows_retaining == 0


def _retained(value: bytes, wanted: np.ndarray) -> set[bytes]:
    """The hashes of ``wanted`` (sorted ``<u8``, not empty) that ``value`` holds at any byte
    offset: the same as ``h in value`` for each, by binary search of every 8-byte window (a
    batch searches thousands of hashes; one ``in`` each would read the value thousands of
    times)."""
    found: set[bytes] = set()
    for offset in range(min(8, len(value) - 7)):
        words = np.frombuffer(value, dtype="<u8", count=(len(value) - offset) // 8, offset=offset)
        at = np.minimum(np.searchsorted(wanted, words), len(wanted) - 1)
        found.update(int(h).to_bytes(8, "little") for h in words[wanted[at] == words])
    return found


def retention(table, storage: LakeStorage, day: date, hashes: set[bytes]) -> Retention:
    """Search every sketch row of ``day`` (the pairs its build listed) for ``hashes``."""
    manifest = pairs_manifest(day)
    pairs = json.loads(storage.read_bytes(manifest)) if storage.exists(manifest) else []
    wanted = np.sort(np.frombuffer(b"".join(sorted(hashes)), dtype="<u8"))
    search = (lambda value: _retained(value, wanted)) if len(wanted) else (lambda value: set())
    checked = retaining = 0
    found: set[bytes] = set()
    examples: list[str] = []
    for app_id, event_type in pairs:
        prefix = SEPARATOR.join(
            (encode_component(app_id), encode_component(event_type), day_component(day), "")
        ).encode()
        for key, cells in table.scan(row_prefix=prefix, columns=[THETA, COUNTS], batch_size=500):
            checked += 1
            held = set().union(*(search(value) for value in cells.values()))
            if held:
                retaining += 1
                found |= held
                if len(examples) < 10:
                    examples.append(key.decode(errors="replace"))
    return Retention(checked, retaining, frozenset(found), examples)
