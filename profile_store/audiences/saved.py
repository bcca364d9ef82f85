"""Saved audiences: named query trees per tenant in the HBase table ``audiences``.

```
row   <tenant>|<audience id>          (tenant percent-encoded as in sketch keys; id 12 hex)
d:name        the audience's name, unique within the tenant
d:query       the query tree, JSON (relative leaves stay relative: ``last_days``)
d:created     ISO-8601 UTC time of creation
d:updated     ISO-8601 UTC time of the last change
d:activation  JSON {"segment", "ttl_days", "active"}: written to profiles by the daily run
```

One row per audience, so a tenant's list is one prefix scan and every change is one put. The
store checks what it owns (names, ids, the activation's fields); the caller admits the query
(``tenants.admissible_query`` and the tenant's apps) before saving it.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from types import EllipsisType
from typing import Any

from profile_store.audiences.rowkey import SEPARATOR, decode_component, encode_component
from profile_store.profiles.segment_rules import SEGMENT_ID

AUDIENCE_TABLE = "audiences"
FAMILIES = {"d": {"max_versions": 1}}
NAME = b"d:name"
QUERY = b"d:query"
CREATED = b"d:created"
UPDATED = b"d:updated"
ACTIVATION = b"d:activation"
MAX_NAME_LENGTH = 200
MAX_TTL_DAYS = 3650


class SavedAudienceError(ValueError):
    """A request the store refuses; ``field`` names the offending field."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


class UnknownAudience(LookupError):
    """No audience with this id in the tenant."""


class DuplicateName(SavedAudienceError):
    """Another audience of the tenant already has the name."""


class SegmentTaken(SavedAudienceError):
    """Another saved audience (of any tenant) already delivers this segment id: segments on
    profiles are one namespace, so two audiences would silently merge into one segment."""


@dataclass(frozen=True)
class Activation:
    """Deliver the audience's members to profiles as ``segment`` for ``ttl_days`` after each run
    that finds them; ``active`` False stops renewal (memberships then expire)."""

    segment: str
    ttl_days: float
    active: bool = True

    @classmethod
    def from_dict(cls, value: Any, field: str = "activation") -> Activation:
        if not isinstance(value, dict):
            raise SavedAudienceError(field, "expected an object {segment, ttl_days, active}")
        unknown = sorted(set(value) - {"segment", "ttl_days", "active"})
        if unknown:
            raise SavedAudienceError(f"{field}.{unknown[0]}", "unknown field")
        segment = value.get("segment")
        if not isinstance(segment, str) or not SEGMENT_ID.match(segment):
            raise SavedAudienceError(
                f"{field}.segment", "required, 1-64 characters of letters, digits, _ . -"
            )
        ttl = value.get("ttl_days")
        if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not 0 < ttl <= MAX_TTL_DAYS:
            raise SavedAudienceError(
                f"{field}.ttl_days", f"required, a number of days in (0, {MAX_TTL_DAYS}]"
            )
        active = value.get("active", True)
        if not isinstance(active, bool):
            raise SavedAudienceError(f"{field}.active", "must be true or false")
        return cls(segment, float(ttl), active)

    def to_dict(self) -> dict:
        return {"segment": self.segment, "ttl_days": self.ttl_days, "active": self.active}


@dataclass(frozen=True)
class SavedAudience:
    tenant: str
    id: str
    name: str
    query: dict
    created: str
    updated: str
    activation: Activation | None = None

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "name": self.name,
            "query": self.query,
            "created": self.created,
            "updated": self.updated,
            "activation": self.activation.to_dict() if self.activation else None,
        }


def check_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise SavedAudienceError("name", "required, a non-empty string")
    if len(name) > MAX_NAME_LENGTH:
        raise SavedAudienceError("name", f"longer than {MAX_NAME_LENGTH} characters")
    return name.strip()


def _prefix(tenant: str) -> bytes:
    return (encode_component(tenant) + SEPARATOR).encode()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _decode(key: bytes, cells: dict[bytes, bytes]) -> SavedAudience:
    tenant, _, audience_id = key.decode().rpartition(SEPARATOR)
    activation = cells.get(ACTIVATION)
    return SavedAudience(
        tenant=decode_component(tenant),
        id=audience_id,
        name=cells[NAME].decode(),
        query=json.loads(cells[QUERY]),
        created=cells[CREATED].decode(),
        updated=cells[UPDATED].decode(),
        activation=Activation.from_dict(json.loads(activation)) if activation else None,
    )


class SavedAudiences:
    """The tenants' saved audiences; ``open_table`` yields the happybase ``audiences`` table."""

    def __init__(self, open_table: Callable[[], AbstractContextManager]) -> None:
        self.open_table = open_table

    def list(self, tenant: str) -> list[SavedAudience]:
        """The tenant's audiences, by name."""
        with self.open_table() as table:
            found = [_decode(k, c) for k, c in table.scan(row_prefix=_prefix(tenant))]
        return sorted(found, key=lambda audience: (audience.name.lower(), audience.id))

    def get(self, tenant: str, audience_id: str) -> SavedAudience:
        if not audience_id.isalnum():
            raise UnknownAudience(audience_id)
        with self.open_table() as table:
            cells = table.row(_prefix(tenant) + audience_id.encode())
        if not cells:
            raise UnknownAudience(audience_id)
        return _decode(_prefix(tenant) + audience_id.encode(), cells)

    def create(
        self, tenant: str, name: str, query: dict, activation: Activation | None = None
    ) -> SavedAudience:
        name = check_name(name)
        self._check_unique(tenant, name, None)
        self._check_segment(activation, None)
        now = _now()
        audience = SavedAudience(tenant, secrets.token_hex(6), name, query, now, now, activation)
        self._put(audience)
        return audience

    def update(
        self,
        tenant: str,
        audience_id: str,
        *,
        name: str | None = None,
        query: dict | None = None,
        activation: Activation | None | EllipsisType = ...,
    ) -> SavedAudience:
        """Change the given fields; ``activation=None`` removes it, ``...`` leaves it."""
        current = self.get(tenant, audience_id)
        if name is not None:
            name = check_name(name)
            self._check_unique(tenant, name, audience_id)
        if activation is not ...:
            self._check_segment(activation, audience_id)
        updated = SavedAudience(
            tenant,
            audience_id,
            name if name is not None else current.name,
            query if query is not None else current.query,
            current.created,
            _now(),
            current.activation if activation is ... else activation,
        )
        self._put(updated)
        return updated

    def delete(self, tenant: str, audience_id: str) -> None:
        self.get(tenant, audience_id)
        with self.open_table() as table:
            table.delete(_prefix(tenant) + audience_id.encode())

    def activated(self) -> Iterator[SavedAudience]:
        """Every tenant's audiences marked active, for the daily run."""
        with self.open_table() as table:
            rows = list(table.scan(columns=[NAME, QUERY, CREATED, UPDATED, ACTIVATION]))
        for key, cells in rows:
            audience = _decode(key, cells)
            if audience.activation is not None and audience.activation.active:
                yield audience

    def _check_unique(self, tenant: str, name: str, audience_id: str | None) -> None:
        for other in self.list(tenant):
            if other.name.lower() == name.lower() and other.id != audience_id:
                raise DuplicateName("name", f"the tenant already has an audience named {name!r}")

    def _check_segment(self, activation: Activation | None, audience_id: str | None) -> None:
        if activation is None:
            return
        with self.open_table() as table:
            rows = list(table.scan(columns=[ACTIVATION]))
        for key, cells in rows:
            other = json.loads(cells.get(ACTIVATION, b"null"))
            other_id = key.decode().rpartition(SEPARATOR)[2]
            if other and other["segment"] == activation.segment and other_id != audience_id:
                raise SegmentTaken(
                    "activation.segment",
                    f"segment {activation.segment!r} is already delivered by another saved "
                    "audience: choose another segment id",
                )

    def _put(self, audience: SavedAudience) -> None:
        cells = {
            NAME: audience.name.encode(),
            QUERY: json.dumps(audience.query, sort_keys=True).encode(),
            CREATED: audience.created.encode(),
            UPDATED: audience.updated.encode(),
        }
        with self.open_table() as table:
            key = _prefix(audience.tenant) + audience.id.encode()
            if audience.activation is None:
                table.delete(key, columns=[ACTIVATION])
            else:
                cells[ACTIVATION] = json.dumps(audience.activation.to_dict()).encode()
            table.put(key, cells)


def ensure_table(connection, name: str = AUDIENCE_TABLE) -> None:
    if name.encode() not in connection.tables():
        connection.create_table(name, FAMILIES)
