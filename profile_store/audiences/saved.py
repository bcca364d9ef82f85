"""Saved audiences: named query trees per tenant in the HBase table ``audiences``.

```
<tenant>|<audience id>     d:audience  JSON {name, query, created, updated, activation[, pending]}
|name|<tenant>|<name>      d:owner     the claim of a name in a tenant (lower case)
|segment|<segment id>      d:owner     the claim of a segment id (one namespace for all tenants)
```

(Tenants percent-encoded as in sketch keys; an id is 12 hex digits; a claim row starts with
``|``, which no audience row does.) A tenant's list is one prefix scan. ``activation`` is
``{"segment", "ttl_days", "active"}``, delivered to profiles by the daily run; the query keeps
relative leaves relative (``last_days``).

**Names and segment ids are unique, atomically** (``claims.py``): every change of an audience is
one compare-and-set of its one cell, and a change that needs a name or segment id it does not
hold yet goes in three steps: its row records the change as ``pending`` (what it will claim),
it takes the claims, and the row's cell is set from the pending state to the new audience. Of
two saves racing for one name, in one process or in several, one takes the claim and the other
is refused; a row's cell is only ever set from the exact value read, so a change is applied
whole or not at all. A claim held by a row that does not name it is stale and taken over; a
pending change older than ``PENDING_TIMEOUT_S`` (its process stopped midway) is cancelled by
the writer that finds it, with the same compare-and-set, so it can never complete afterwards:
correctness never depends on clocks, only how soon a stopped change's claims come free.

Rows written before this layout (``d:name``, ``d:query``, ``d:created``, ``d:updated``,
``d:activation``) are read as they are, take their claims at ``ensure_table`` and move to
``d:audience`` on their next change.

The store checks what it owns (names, ids, the activation's fields); the caller admits the
query (``admission.admissible_query`` and the tenant's apps) before saving it.
"""

from __future__ import annotations

import contextlib
import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from types import EllipsisType
from typing import Any

from profile_store.audiences.claims import check_and_put, give_back, take
from profile_store.audiences.rowkey import SEPARATOR, decode_component, encode_component
from profile_store.profiles.segment_rules import SEGMENT_ID

AUDIENCE_TABLE = "audiences"
FAMILIES = {"d": {"max_versions": 1}}
RECORD = b"d:audience"
NAME = b"d:name"
QUERY = b"d:query"
CREATED = b"d:created"
UPDATED = b"d:updated"
ACTIVATION = b"d:activation"
LEGACY_COLUMNS = [NAME, QUERY, CREATED, UPDATED, ACTIVATION]
READ_COLUMNS = [RECORD, *LEGACY_COLUMNS]
CLAIM_ROW = b"|"
MAX_NAME_LENGTH = 200
MAX_TTL_DAYS = 3650
PENDING_TIMEOUT_S = 60.0
"""A pending change older than this is taken for stopped midway, and may be cancelled."""
MAX_ATTEMPTS = 8


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
    profiles are one namespace, so two audiences would silently merge into one segment. The
    message is the same whoever holds it: it names no audience and no tenant."""


class ConcurrentChange(SavedAudienceError):
    """Another change of the same audience is under way (or overtook this one): retry."""


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
        if not isinstance(segment, str) or not SEGMENT_ID.fullmatch(segment):
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
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        raise SavedAudienceError("name", "not valid Unicode (unpaired surrogate)") from None
    return name.strip()


def _prefix(tenant: str) -> bytes:
    return (encode_component(tenant) + SEPARATOR).encode()


def _row_key(tenant: str, audience_id: str) -> bytes:
    return _prefix(tenant) + audience_id.encode()


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def name_claim(tenant: str, name: str) -> bytes:
    return CLAIM_ROW + b"name|" + _prefix(tenant) + name.lower().encode()


def segment_claim(segment: str) -> bytes:
    return CLAIM_ROW + b"segment|" + segment.encode()


def claims_of(audience: SavedAudience | None) -> list[bytes]:
    """The claims an audience holds: its name in its tenant, its segment id if activated."""
    if audience is None:
        return []
    held = [name_claim(audience.tenant, audience.name)]
    if audience.activation is not None:
        held.append(segment_claim(audience.activation.segment))
    return held


@dataclass(frozen=True)
class Pending:
    """A change under way: the claims it takes before it completes, and when it began."""

    claims: tuple[bytes, ...]
    nonce: str
    since: float

    def stopped(self, now: float) -> bool:
        return now - self.since > PENDING_TIMEOUT_S


@dataclass(frozen=True)
class StoredRow:
    """An audience row as read: ``raw`` is its cell (None for a row of the older layout),
    ``audience`` None while a creation is pending."""

    key: bytes
    raw: bytes | None
    audience: SavedAudience | None
    pending: Pending | None = None


def _encode(audience: SavedAudience | None, pending: Pending | None = None) -> bytes:
    record: dict[str, Any] = {}
    if audience is not None:
        record = {k: v for k, v in audience.to_dict().items() if k != "id"}
    if pending is not None:
        record["pending"] = {
            "claims": [claim.decode() for claim in pending.claims],
            "nonce": pending.nonce,
            "since": pending.since,
        }
    return json.dumps(record, sort_keys=True).encode()


def _decode(key: bytes, cells: dict[bytes, bytes]) -> StoredRow | None:
    """The row, or None when there is none (absent, deleted, or only a claim's row)."""
    if key.startswith(CLAIM_ROW):
        return None
    tenant, _, audience_id = key.decode().rpartition(SEPARATOR)
    tenant = decode_component(tenant)
    raw = cells.get(RECORD)
    if raw is None:
        if NAME not in cells:
            return None
        activation = cells.get(ACTIVATION)
        record = {
            "name": cells[NAME].decode(),
            "query": json.loads(cells[QUERY]),
            "created": cells[CREATED].decode(),
            "updated": cells[UPDATED].decode(),
            "activation": json.loads(activation) if activation else None,
        }
    elif not raw:
        return None  # deleted
    else:
        record = json.loads(raw)
    pending = record.get("pending")
    audience = None
    if "name" in record:
        activation = record["activation"]
        audience = SavedAudience(
            tenant=tenant,
            id=audience_id,
            name=record["name"],
            query=record["query"],
            created=record["created"],
            updated=record["updated"],
            activation=Activation.from_dict(activation) if activation else None,
        )
    return StoredRow(
        key,
        raw,
        audience,
        None
        if pending is None
        else Pending(
            tuple(claim.encode() for claim in pending["claims"]),
            pending["nonce"],
            pending["since"],
        ),
    )


class SavedAudiences:
    """The tenants' saved audiences; ``open_table`` yields the happybase ``audiences`` table.

    ``clock`` (epoch seconds) dates pending changes; it only decides how soon a stopped change
    is cancelled.
    """

    def __init__(
        self,
        open_table: Callable[[], AbstractContextManager],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.open_table = open_table
        self.clock = clock

    def list(self, tenant: str) -> list[SavedAudience]:
        """The tenant's audiences, by name."""
        with self.open_table() as table:
            rows = list(table.scan(row_prefix=_prefix(tenant), columns=READ_COLUMNS))
        found = [stored.audience for stored in _rows(rows) if stored.audience is not None]
        return sorted(found, key=lambda audience: (audience.name.lower(), audience.id))

    def get(self, tenant: str, audience_id: str) -> SavedAudience:
        """The audience as last changed (a change under way shows once complete)."""
        if not audience_id.isalnum():
            raise UnknownAudience(audience_id)
        key = _row_key(tenant, audience_id)
        with self.open_table() as table:
            stored = _decode(key, table.row(key, columns=READ_COLUMNS))
        if stored is None or stored.audience is None:
            raise UnknownAudience(audience_id)
        return stored.audience

    def create(
        self, tenant: str, name: str, query: dict, activation: Activation | None = None
    ) -> SavedAudience:
        name = check_name(name)
        with self.open_table() as table:
            for _ in range(MAX_ATTEMPTS):
                now = _now()
                audience = SavedAudience(
                    tenant, secrets.token_hex(6), name, query, now, now, activation
                )
                if self._change(table, None, audience):
                    return audience
        raise ConcurrentChange("name", "the audience could not be saved: retry")

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
        if name is not None:
            name = check_name(name)
        with self.open_table() as table:
            for _ in range(MAX_ATTEMPTS):
                stored, current = self._current(table, tenant, audience_id)
                updated = replace(
                    current,
                    name=current.name if name is None else name,
                    query=current.query if query is None else query,
                    updated=_now(),
                    activation=current.activation if activation is ... else activation,
                )
                if self._change(table, stored, updated):
                    return updated
        raise ConcurrentChange("$", "the audience changed too often meanwhile: retry")

    def delete(self, tenant: str, audience_id: str) -> None:
        with self.open_table() as table:
            for _ in range(MAX_ATTEMPTS):
                stored, _ = self._current(table, tenant, audience_id)
                if check_and_put(table, stored.key, RECORD, stored.raw, b""):
                    table.delete(stored.key)
                    for claim in claims_of(stored.audience):
                        give_back(table, claim, stored.key)
                    return
        raise ConcurrentChange("$", "the audience changed too often meanwhile: retry")

    def claim_older_rows(self) -> int:
        """Rows of the older layout (saved before names were claimed) take the claims they
        name, where no other row holds them (a duplicate saved before stays as it is); the
        number of claims taken. Run at start, before the service answers."""
        taken = 0
        with self.open_table() as table:
            rows = list(table.scan(columns=READ_COLUMNS))
            for stored in _rows(rows):
                if stored.raw is not None:
                    continue
                for claim in claims_of(stored.audience):
                    taken += take(table, claim, stored.key, "older", self._holds_in(table))
        return taken

    def activated(self) -> Iterator[SavedAudience]:
        """Every tenant's audiences marked active, for the daily run."""
        with self.open_table() as table:
            rows = list(table.scan(columns=READ_COLUMNS))
        for stored in _rows(rows):
            audience = stored.audience
            if audience is not None and audience.activation and audience.activation.active:
                yield audience

    # -- the compare-and-set protocol (module docstring) ------------------------------------

    def _current(self, table, tenant: str, audience_id: str) -> tuple[StoredRow, SavedAudience]:
        """The audience's row, with no pending change left (a stopped one is cancelled), and its
        audience: else ``UnknownAudience``, or ``ConcurrentChange`` while another change is
        under way."""
        if not audience_id.isalnum():
            raise UnknownAudience(audience_id)
        key = _row_key(tenant, audience_id)
        for _ in range(MAX_ATTEMPTS):
            stored = _decode(key, table.row(key, columns=READ_COLUMNS))
            if stored is None or stored.audience is None:
                raise UnknownAudience(audience_id)
            if stored.pending is None:
                return stored, stored.audience
            if not stored.pending.stopped(self.clock()):
                raise ConcurrentChange("$", "another change of this audience is under way: retry")
            self._cancel(table, stored)
        raise ConcurrentChange("$", "another change of this audience is under way: retry")

    def _cancel(self, table, stored: StoredRow) -> bool:
        """Cancel ``stored``'s pending change, so that it can never complete: True when done
        here, False when the row changed meanwhile."""
        if not check_and_put(table, stored.key, RECORD, stored.raw, _encode(stored.audience)):
            return False
        if stored.audience is None:  # a creation: nothing is left of it
            table.delete(stored.key)
        return True

    def _holds(self, table, holder: bytes, claim: bytes) -> bool:
        """Whether row ``holder`` still holds ``claim`` (for ``claims.take``): it names it, or
        a pending change of it will; a stopped one is cancelled first, then it does not."""
        for _ in range(MAX_ATTEMPTS):
            stored = _decode(holder, table.row(holder, columns=READ_COLUMNS))
            if stored is None:
                return False
            if claim in claims_of(stored.audience):
                return True
            if stored.pending is None or claim not in stored.pending.claims:
                return False
            if not stored.pending.stopped(self.clock()):
                return True
            if self._cancel(table, stored):
                return False
        return True

    def _change(self, table, stored: StoredRow | None, audience: SavedAudience) -> bool:
        """Set the audience's cell from ``stored`` (None: a new audience) to ``audience``,
        taking the claims it needs first: False when the row changed meanwhile (read again);
        ``DuplicateName`` / ``SegmentTaken`` when a claim is held."""
        key = _row_key(audience.tenant, audience.id)
        expected = None if stored is None else stored.raw
        held = claims_of(None if stored is None else stored.audience)
        needed = [claim for claim in claims_of(audience) if claim not in held]
        if needed:
            pending = Pending(tuple(needed), secrets.token_hex(8), self.clock())
            intent = _encode(None if stored is None else stored.audience, pending)
            if not check_and_put(table, key, RECORD, expected, intent):
                return False
            taken = []
            try:
                for claim in needed:
                    if not take(table, claim, key, pending.nonce, self._holds_in(table)):
                        raise _refusal(claim, audience)
                    taken.append(claim)
            except BaseException:
                before = None if stored is None else stored.audience
                self._cancel(table, StoredRow(key, intent, before))
                for claim in taken:
                    give_back(table, claim, key)
                raise
            expected = intent
        if not check_and_put(table, key, RECORD, expected, _encode(audience)):
            if not needed:
                return False
            for claim in needed:  # cancelled by another writer after too long a pause
                give_back(table, claim, key)
            raise ConcurrentChange("$", "the change paused too long and was cancelled: retry")
        if stored is not None and stored.raw is None:
            table.delete(key, columns=LEGACY_COLUMNS)
        for claim in held:
            if claim not in claims_of(audience):
                give_back(table, claim, key)
        return True

    def _holds_in(self, table) -> Callable[[bytes, bytes], bool]:
        return lambda holder, claim: self._holds(table, holder, claim)


def _refusal(claim: bytes, audience: SavedAudience) -> SavedAudienceError:
    if claim == name_claim(audience.tenant, audience.name):
        return DuplicateName("name", f"the tenant already has an audience named {audience.name!r}")
    segment = audience.activation.segment if audience.activation else ""
    return SegmentTaken(
        "activation.segment", f"segment id {segment!r} is not available: choose another"
    )


def _rows(rows: list[tuple[bytes, dict[bytes, bytes]]]) -> Iterator[StoredRow]:
    for key, cells in rows:
        stored = _decode(key, cells)
        if stored is not None:
            yield stored


def ensure_table(connection, name: str = AUDIENCE_TABLE) -> None:
    """Create the table if missing; else let rows of the older layout take their claims."""
    if name.encode() not in connection.tables():
        connection.create_table(name, FAMILIES)
        return
    table = connection.table(name)
    SavedAudiences(lambda: contextlib.nullcontext(table)).claim_older_rows()
