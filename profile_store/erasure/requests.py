"""An erasure request: who asked to forget which ids, kept in the lake until it is carried out.

``erasure/requests/<request id>.json`` holds the ids as given (the erasure step needs them to
find the person's rows in the lake), the bound on the person's size the request was accepted
with, and its plan: what the resolution named for removal before anything was removed. The
erasure step deletes the file when the request completes and keeps only the audit report
(``report.py``), which has no personal data.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from profile_store.events.id_case import normalize_id
from profile_store.lake.storage import LakeStorage
from profile_store.settings.definitions import ERASURE_MAX_PROFILES, SettingError

REQUESTS = "erasure/requests"
PROFILE_ID = "profile"
"""The key type of a device or cookie id (the events' ``user_id``), the default."""

DEFAULT_MAX_PROFILES = ERASURE_MAX_PROFILES.integer_default
MAX_PROFILES_ENV = ERASURE_MAX_PROFILES.name


class ErasureRequestError(ValueError):
    """A request that cannot be recorded; the message names the field and the problem."""


class ErasureRefused(ErasureRequestError):
    """A well-formed request whose resolution is refused: a quarantined key, or more profiles
    than the bound. Nothing was recorded."""


def max_profiles_from_env(environ: Mapping[str, str] | None = None) -> int:
    """``PROFILES_ERASURE_MAX_PROFILES``, else ``DEFAULT_MAX_PROFILES``."""
    try:
        return ERASURE_MAX_PROFILES.read(environ)
    except SettingError as error:
        raise ErasureRequestError(str(error)) from None


def checked_max_profiles(value: object, name: str = "max_profiles") -> int:
    """A bound of at least 1; ``ErasureRequestError`` naming ``name`` otherwise."""
    try:
        bound = int(str(value))
    except ValueError:
        raise ErasureRequestError(f"{name}: expected a whole number, got {value!r}") from None
    if bound < 1:
        raise ErasureRequestError(f"{name}: must be at least 1, got {bound}")
    return bound


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
    max_profiles: int = DEFAULT_MAX_PROFILES  # the bound on the person it was accepted with
    plan: dict = field(default_factory=dict)  # what it named for removal (ids; this file only)

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
            max_profiles=body.get("max_profiles", DEFAULT_MAX_PROFILES),
            plan=body.get("plan", {}),
        )


def given_ids(ids: list[str], key_type: str | None, key_types: tuple[str, ...]) -> list[GivenId]:
    """Validate the ids of a request; ``key_types``: the bridging key types besides profiles.

    An alternate id of a case-insensitive kind (a hex digest) is taken in its one spelling; a
    device id's spelling is the resolution's to find (its kind is in the lake, not the request).
    """
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
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ErasureRequestError(
                f"ids[{i}]: not valid text (an unpaired surrogate, or bytes that are not UTF-8)"
            ) from None
    if kind != PROFILE_ID:
        ids = [normalize_id(kind, value) for value in ids]
    return [GivenId(value, kind) for value in dict.fromkeys(ids)]


def new_request(
    ids: list[GivenId], now: datetime | None = None, max_profiles: int = DEFAULT_MAX_PROFILES
) -> ErasureRequest:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    request_id = f"er-{moment:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"
    return ErasureRequest(
        request_id, moment.isoformat(timespec="seconds"), tuple(ids), max_profiles=max_profiles
    )


def save_request(storage: LakeStorage, request: ErasureRequest) -> None:
    storage.write_bytes(request.path, request.to_json())


def pending_requests(storage: LakeStorage) -> list[ErasureRequest]:
    """Requests not yet carried out by the erasure step, oldest first."""
    if not storage.exists(REQUESTS):
        return []
    files = [f for f in storage.list_files(REQUESTS) if f.path.endswith(".json")]
    requests = [ErasureRequest.from_json(storage.read_bytes(f.path)) for f in files]
    return sorted(requests, key=lambda r: (r.requested_at, r.request_id))
