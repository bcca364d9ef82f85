"""The suppression list: salted SHA-256 digests of forgotten ids, never the ids themselves.

Ingest drops every event whose ``user_id``, ``member_id`` or an ``alt_ids`` value has a digest
on the list, so the next runs do not re-create a forgotten person. The salt keeps the list from
being a dictionary of the ids: set ``PROFILES_SUPPRESSION_SALT`` from a secret store in
production; otherwise a random salt is made once and kept in the lake (``erasure/salt``).
Spark computes the same digest as ``digest()``: ``sha2(concat(salt, '\\0', id), 256)``.

```
erasure/salt                          hex salt (when not given by the environment)
erasure/suppression/<request>.json    {"request_id": ..., "digests": [hex, ...]}
```
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pyspark.sql import Column
from pyspark.sql import functions as F

from profile_store.lake.storage import LakeStorage

SALT_ENV = "PROFILES_SUPPRESSION_SALT"
SALT_FILE = "erasure/salt"
SUPPRESSION = "erasure/suppression"


def salt(storage: LakeStorage, environ: Mapping[str, str] | None = None) -> str:
    """The salt: from the environment, else the lake's (made on first use)."""
    given = (os.environ if environ is None else environ).get(SALT_ENV, "").strip()
    if given:
        return given
    if storage.exists(SALT_FILE):
        return storage.read_bytes(SALT_FILE).decode().strip()
    made = secrets.token_hex(32)
    storage.write_bytes(SALT_FILE, made.encode())
    return made


def digest(salt_text: str, id_value: str) -> str:
    return hashlib.sha256(f"{salt_text}\0{id_value}".encode()).hexdigest()


def digest_column(salt_text: str, column: Column) -> Column:
    """``digest()`` in Spark (null for a null id)."""
    return F.sha2(F.concat(F.lit(f"{salt_text}\0"), column), 256)


@dataclass(frozen=True)
class Suppression:
    """The salt and every digest on the list."""

    salt: str
    digests: frozenset[str]

    @classmethod
    def load(cls, storage: LakeStorage, environ: Mapping[str, str] | None = None) -> Suppression:
        found: set[str] = set()
        if storage.exists(SUPPRESSION):
            for entry in storage.list_files(SUPPRESSION):
                if entry.path.endswith(".json"):
                    found.update(json.loads(storage.read_bytes(entry.path))["digests"])
        # No list, no salt needed: ingest of a lake without erasures writes nothing here.
        return cls(salt(storage, environ) if found else "", frozenset(found))

    def covers(self, id_value: str) -> bool:
        return digest(self.salt, id_value) in self.digests

    def matches(self) -> Column:
        """True for an event row (``user_id``, ``member_id``, ``alt_ids``) of a suppressed id."""
        listed = sorted(self.digests)

        def on_list(column: Column) -> Column:
            return F.coalesce(digest_column(self.salt, column).isin(listed), F.lit(False))

        alt_ids = F.coalesce(F.map_values("alt_ids"), F.array().cast("array<string>"))
        return (
            on_list(F.col("user_id"))
            | on_list(F.col("member_id"))
            | F.exists(alt_ids, lambda value: on_list(value))
        )


def add_to_list(storage: LakeStorage, request_id: str, ids: Iterable[str]) -> int:
    """Put ``ids`` on the list (as digests) for ``request_id``, in one file written at once;
    returns how many digests."""
    salt_text = salt(storage)
    digests = sorted({digest(salt_text, value) for value in ids})
    body = {"request_id": request_id, "digests": digests}
    storage.write_bytes(f"{SUPPRESSION}/{request_id}.json", json.dumps(body, indent=1).encode())
    return len(digests)


def remove_from_list(storage: LakeStorage, request_id: str) -> None:
    """Take ``request_id``'s digests off the list (a request that failed while recorded)."""
    storage.delete_tree(f"{SUPPRESSION}/{request_id}.json")
