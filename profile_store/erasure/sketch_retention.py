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

from datasketches import update_theta_sketch

from profile_store.audiences.day_sketches import pairs_manifest
from profile_store.audiences.rowkey import SEPARATOR, day_component, encode_component
from profile_store.audiences.sketch_table import COUNTS, THETA
from profile_store.lake.storage import LakeStorage


def id_hashes(ids: Iterable[str]) -> set[bytes]:
    """The 8 bytes each id's hash has in a serialized sketch."""
    found = set()
    for value in ids:
        sketch = update_theta_sketch()
        sketch.update(value)
        found.update(struct.pack("<Q", h) for h in sketch.compact())
    return found


@dataclass(frozen=True)
class Retention:
    rows_checked: int
    rows_retaining: int
    examples: list[str] = field(default_factory=list)  # row keys: apps, events, attributes

    @property
    def clean(self) -> bool:
        return self.rows_retaining == 0


def retention(table, storage: LakeStorage, day: date, hashes: set[bytes]) -> Retention:
    """Search every sketch row of ``day`` (the pairs its build listed) for ``hashes``."""
    manifest = pairs_manifest(day)
    pairs = json.loads(storage.read_bytes(manifest)) if storage.exists(manifest) else []
    checked = retaining = 0
    examples: list[str] = []
    for app_id, event_type in pairs:
        prefix = SEPARATOR.join(
            (encode_component(app_id), encode_component(event_type), day_component(day), "")
        ).encode()
        for key, cells in table.scan(row_prefix=prefix, columns=[THETA, COUNTS], batch_size=500):
            checked += 1
            if any(h in value for value in cells.values() for h in hashes):
                retaining += 1
                if len(examples) < 10:
                    examples.append(key.decode(errors="replace"))
    return Retention(checked, retaining, examples)
