"""An erasure request: who asked to forget which ids, kept in the lake until it is carried out.

``erasure/requests/<request id>.json`` holds the ids as given (the erasure step needs them to
find the person's rows in the lake); the erasure step deletes the file when the request
completes and keeps only the audit report (``report.py``), which has no personal data.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from profile_store.lake_storage import LakeStorage

REQUESTS = "erasure/requests"
PROFILE_ID = "profile"
"""The key type of a device or cookie id (the events' ``user_id``), the default."""


class ErasureRequestError(ValueError):
    """A request that cannot be recorded; the message names the field and the problem."""


@dataclass(frozen=True)
class GivenId:
    """One id as the requester gave it: a profile id, or a bridging key (a login, an email hash)."""

    id: str
    key_type: str = PROFILE_ID


@dataclass(frozen=True)
class ErasureRequest:
    request_id: str
    requested_at: str  # ISO-8601, UTC
    ids: tuple[GivenId, ...]
    immediate: dict = field(default_factory=dict)  # what the request deleted at once (counts)

    @property
    def path(self) -> str:
        return f"{REQUESTS}/{self.request_id}.json"

    def to_json(self) -> bytes:
        body = asdict(self)
        body["ids"] = [asdict(given) for given in self.ids]
        return json.dumps(body, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> ErasureRequest:
        body = json.loads(data)
        return cls(
            request_id=body["request_id"],
            requested_at=body["requested_at"],
            ids=tuple(GivenId(**given) for given in body["ids"]),
            immediate=body.get("immediate", {}),
        )


def given_ids(ids: list[str], key_type: str | None, key_types: tuple[str, ...]) -> list[GivenId]:
    """Validate the ids of a request; ``key_types``: the bridging key types besides profiles."""
    if not ids:
        raise ErasureRequestError("ids: at least one id is required")
    kind = key_type or PROFILE_ID
    if kind != PROFILE_ID and kind not in key_types:
        allowed = ", ".join((PROFILE_ID, *key_types))
        raise ErasureRequestError(f"key_type: unknown key type {kind!r} (one of: {allowed})")
    for i, value in enumerate(ids):
        if not isinstance(value, str) or not value.strip():
            raise ErasureRequestError(f"ids[{i}]: must be a non-empty string")
        if len(value) > 1024:
            raise ErasureRequestError(f"ids[{i}]: longer than 1024 characters")
    return [GivenId(value, kind) for value in dict.fromkeys(ids)]


def new_request(ids: list[GivenId], now: datetime | None = None) -> ErasureRequest:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    request_id = f"er-{moment:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"
    return ErasureRequest(request_id, moment.isoformat(timespec="seconds"), tuple(ids))


def save_request(storage: LakeStorage, request: ErasureRequest) -> None:
    storage.write_bytes(request.path, request.to_json())


def pending_requests(storage: LakeStorage) -> list[ErasureRequest]:
    """Requests not yet carried out by the erasure step, oldest first."""
    if not storage.exists(REQUESTS):
        return []
    files = [f for f in storage.list_files(REQUESTS) if f.path.endswith(".json")]
    requests = [ErasureRequest.from_json(storage.read_bytes(f.path)) for f in files]
    return sorted(requests, key=lambda r: (r.requested_at, r.request_id))
