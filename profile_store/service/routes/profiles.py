"""Profile reads over HTTP: an ``APIRouter`` the audience service includes (``create_app``).

| method and path | answer | round trips |
| --- | --- | --- |
| ``GET /v1/profiles/{id}`` | the whole profile as of now | 1 |
| ``GET /v1/profiles/{id}/segments[?key_type=t]`` | live segments of the id's person | 1-2 |
| ``POST /v1/profiles/segments`` ``{"ids": [...], "key_type"?}`` | live segments per id | 1-2 |
| ``GET /v1/connected?a=..&b=..`` | whether two ids are one person | 1 |
| ``GET /v1/profiles/{id}/linked[?limit=n]`` | the person's other ids | 1 |
| ``GET /v1/masters[?page_size=n&after=token]`` | a page of master ids | 3-4 |

Authentication is the audience API's ``X-API-Key``: tenants own apps, not people, so any valid
tenant key may read profiles; a missing or unknown key is 401. Errors have the service's one
body (``conventions``): 400 ``invalid_request`` (a parameter or body out of bounds; the
message names it), 401, 404 ``unknown_profile`` (a single id asked for has no row; the batch
maps unknown ids to empty segments and lists them in ``unknown``), 502 ``hbase_error`` /
``corrupt_row``, 503 ``hbase_unavailable``. The connection check lives at ``/v1/connected``
so that no profile id (not even ``connected``) is shadowed under ``/v1/profiles/``; ids
containing ``/`` cannot be path parameters and are read with the batch endpoint.
"""

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.config import JsonDict

from profile_store.profiles.bodies import (
    batch_body,
    expiries,
    iso_utc,
    profile_body,
    segments_body,
)
from profile_store.profiles.reads import (
    MAX_IDS,
    MAX_LINKED,
    MAX_PAGE_SIZE,
    CorruptRow,
    InvalidRequest,
    ProfileReader,
)
from profile_store.service.conventions import ApiError, error_doc, hbase_failures, json_body
from profile_store.service.tenants import Tenant

PROFILES_PATH = "/v1/profiles"
CONNECTED_PATH = "/v1/connected"
MASTERS_PATH = "/v1/masters"
MAX_BATCH_BODY_BYTES = 1024 * 1024

NOW = 1_795_000_000_000  # the examples' clock, 2026-11-18
_EXAMPLE_EXPIRIES = {"sports": NOW + 10 * 86_400_000, "travel": NOW + 2 * 86_400_000}
SEGMENTS_EXAMPLE: JsonDict = dict(_EXAMPLE_EXPIRIES)
ISO_EXAMPLE: JsonDict = dict(expiries(_EXAMPLE_EXPIRIES))


class ProfileResponse(BaseModel):
    """A profile as of `now`: live segments only, counters decayed to `now`. Times are
    ISO-8601 UTC; each has its epoch milliseconds beside it (`*_ms`)."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "profile": "idfa-7f3a",
                    "id_type": "idfa",
                    "master": "cookie-91c2",
                    "is_master": False,
                    "first_seen": iso_utc(NOW - 40 * 86_400_000),
                    "first_seen_ms": NOW - 40 * 86_400_000,
                    "devices": 3,
                    "as_of": iso_utc(NOW - 3_600_000),
                    "as_of_ms": NOW - 3_600_000,
                    "now": iso_utc(NOW),
                    "now_ms": NOW,
                    "segments": {**ISO_EXAMPLE, "autos": iso_utc(NOW + 5 * 86_400_000)},
                    "segments_expiry_ms": {**SEGMENTS_EXAMPLE, "autos": NOW + 5 * 86_400_000},
                    "unsynced": {"autos": iso_utc(NOW + 5 * 86_400_000)},
                    "unsynced_expiry_ms": {"autos": NOW + 5 * 86_400_000},
                    "counters": {"purchase": 2.0, "page_view": 11.4},
                    "linked": {"cookie-91c2": "cookie", "gaid-0b7e": "gaid"},
                }
            ]
        }
    )

    profile: str
    id_type: str = Field(description="`cookie`, `idfa` or `gaid`.")
    master: str = Field(description="The person's master profile (this one on a master).")
    is_master: bool
    first_seen: str = Field(description="The profile's first event, ISO-8601 UTC.")
    first_seen_ms: int = Field(description="The same, epoch milliseconds.")
    devices: int = Field(description="Ids in the person, this one included.")
    as_of: str = Field(description="The time the compaction computed the row for (UTC).")
    as_of_ms: int = Field(description="The same, epoch milliseconds.")
    now: str = Field(description="The clock the answer was computed with (UTC).")
    now_ms: int = Field(description="The same, epoch milliseconds.")
    segments: dict[str, str] = Field(
        description="Live segment -> expiry (UTC), compacted and unsynced (later expiry wins)."
    )
    segments_expiry_ms: dict[str, int] = Field(description="The same expiries, epoch ms.")
    unsynced: dict[str, str] = Field(
        description="The live segments a real-time feed added since the last compaction."
    )
    unsynced_expiry_ms: dict[str, int] = Field(description="The same expiries, epoch ms.")
    counters: dict[str, float] = Field(description="Decaying counters, decayed to `now`.")
    linked: dict[str, str] = Field(description="Other ids of the person -> id type (capped).")


class SegmentsResponse(BaseModel):
    """The live segments of one id's person."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "id": "5d41402abc4b2a76b9719d911017c592",
                    "key_type": "email_sha256",
                    "profile": "cookie-91c2",
                    "via_lookup": True,
                    "segments": ISO_EXAMPLE,
                    "segments_expiry_ms": SEGMENTS_EXAMPLE,
                }
            ]
        }
    )

    id: str = Field(description="The id asked about.")
    key_type: str | None = Field(description="The alternate-id type asked with, if any.")
    profile: str = Field(description="The profile row that answered.")
    via_lookup: bool = Field(description="True when `id` was an alternate id (2 round trips).")
    segments: dict[str, str] = Field(description="Live segment -> expiry, ISO-8601 UTC.")
    segments_expiry_ms: dict[str, int] = Field(description="The same expiries, epoch ms.")


class SegmentsBatchRequest(BaseModel):
    """Up to 1000 ids (a bidder sends 25); with `key_type`, ids may also be alternate ids."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"ids": ["cookie-91c2", "gaid-0b7e", "idfa-unknown"]}]},
    )

    ids: list[Annotated[str, Field(min_length=1)]] = Field(min_length=1, max_length=MAX_IDS)
    key_type: str | None = Field(default=None, min_length=1)


class SegmentsBatchResponse(BaseModel):
    """Live segments per id asked (each once); an unknown id maps to `{}` and is listed in
    `unknown`, so that it can be told from a known id without live segments."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "segments": {
                        "cookie-91c2": ISO_EXAMPLE,
                        "gaid-0b7e": ISO_EXAMPLE,
                        "idfa-unknown": {},
                    },
                    "segments_expiry_ms": {
                        "cookie-91c2": SEGMENTS_EXAMPLE,
                        "gaid-0b7e": SEGMENTS_EXAMPLE,
                        "idfa-unknown": {},
                    },
                    "unknown": ["idfa-unknown"],
                }
            ]
        }
    )

    segments: dict[str, dict[str, str]] = Field(
        description="Id -> live segment -> expiry, ISO-8601 UTC."
    )
    segments_expiry_ms: dict[str, dict[str, int]] = Field(
        description="The same expiries, epoch ms."
    )
    unknown: list[str] = Field(
        description="Ids with no profile row (nor, with `key_type`, a lookup row naming one)."
    )


class EdgeResponse(BaseModel):
    weight: float = Field(description="Highest weight of the bridging rules linking the pair.")
    rules: list[str] = Field(description="Names of those rules.")


class ConnectionResponse(BaseModel):
    """Whether `a` and `b` are one person: both exist and share a master."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "a": "idfa-7f3a",
                    "b": "gaid-0b7e",
                    "connected": True,
                    "master_a": "cookie-91c2",
                    "master_b": "cookie-91c2",
                    "edge": None,
                }
            ]
        }
    )

    a: str
    b: str
    connected: bool
    master_a: str | None = Field(description="Master of `a`; null when `a` is unknown.")
    master_b: str | None = Field(description="Master of `b`; null when `b` is unknown.")
    edge: EdgeResponse | None = Field(
        description="The direct edge between `a` and `b`, if any (edges join a master and "
        "another id, so two non-masters have none)."
    )


class LinkedResponse(BaseModel):
    """The other ids of a profile's person."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "profile": "idfa-7f3a",
                    "master": "cookie-91c2",
                    "devices": 3,
                    "linked": {"cookie-91c2": "cookie", "gaid-0b7e": "gaid"},
                    "truncated": False,
                }
            ]
        }
    )

    profile: str
    master: str
    devices: int = Field(description="Ids in the person, this one included.")
    linked: dict[str, str] = Field(description="Other id -> id type, sorted by id.")
    truncated: bool = Field(description="The person has more other ids than `linked` lists.")


class MastersResponse(BaseModel):
    """A page of master profile ids, in row-key order."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [{"ids": ["cookie-0a1f", "cookie-91c2"], "next_after": "cookie-91c2"}]
        }
    )

    ids: list[str]
    next_after: str | None = Field(
        description="Pass as `after` for the next page; null on the last page."
    )


@contextlib.contextmanager
def _answering(action: str, body_field: bool = False) -> Iterator[None]:
    """Reader failures as API errors: bad input 400, undecodable row 502, HBase 502/503.

    A 400's ``path`` locates the value as FastAPI's own parameter errors do: ``$.field`` in the
    body, ``path.id`` for the id in the URL, ``query.name`` for a query parameter.
    """
    try:
        with hbase_failures(action):
            yield
    except InvalidRequest as exc:
        if body_field:
            path = f"$.{exc.field}"
        else:
            path = f"path.{exc.field}" if exc.field == "id" else f"query.{exc.field}"
        raise ApiError(400, "invalid_request", str(exc), path) from None
    except CorruptRow as exc:
        raise ApiError(502, "corrupt_row", f"a row does not decode: {exc}") from None


def _unknown(id: str) -> ApiError:
    return ApiError(404, "unknown_profile", f"no profile {id!r}")


def _batch_request(body: Any) -> SegmentsBatchRequest:
    """The body as ``SegmentsBatchRequest``; a mismatch is a 400 naming its JSON path."""
    try:
        return SegmentsBatchRequest.model_validate(body, strict=True)
    except ValidationError as exc:
        first = exc.errors()[0]
        path = "$" + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
        )
        raise ApiError(400, "invalid_request", first["msg"], path) from None


def profile_router(reader: ProfileReader, current_tenant: Callable[..., Tenant]) -> APIRouter:
    """The profile endpoints reading through ``reader``; ``current_tenant`` authenticates."""
    router = APIRouter(
        tags=["profiles"],
        dependencies=[Depends(current_tenant)],
        responses={
            400: error_doc("A parameter is out of bounds; the message names it."),
            401: error_doc("Missing or unknown API key."),
            502: error_doc("HBase answered with an error, or a row does not decode."),
            503: error_doc("HBase cannot be reached."),
        },
    )
    not_found: dict[int | str, dict[str, Any]] = {404: error_doc("No profile has this id.")}
    # The alternate-id types this deployment has lookup rows for are the only valid ones: the
    # published schema says so, as the reads do.
    key_types = None if reader.key_types is None else list(reader.key_types)
    key_type_enum = {} if key_types is None else {"enum": key_types}
    batch_schema = SegmentsBatchRequest.model_json_schema()
    if key_types is not None:
        batch_schema["properties"]["key_type"]["anyOf"][0]["enum"] = key_types
    IdPath = Annotated[str, Path(description="A profile (device or cookie) id.")]

    @router.get(
        PROFILES_PATH + "/{id}",
        summary="Read a whole profile (1 round trip)",
        response_model=ProfileResponse,
        responses=not_found,
    )
    def get_profile(id: IdPath) -> ProfileResponse:
        with _answering("a profile read"):
            view = reader.profile(id)
        if view is None:
            raise _unknown(id)
        return ProfileResponse(**profile_body(view))

    @router.get(
        PROFILES_PATH + "/{id}/segments",
        summary="Live segments of any id of a person (1 round trip; 2 for an alternate id)",
        response_model=SegmentsResponse,
        responses=not_found,
    )
    def get_segments(
        id: IdPath,
        key_type: Annotated[
            str | None,
            Query(
                min_length=1,
                json_schema_extra=key_type_enum,
                description="Also accept `id` as an alternate id of this type: `member_id` "
                "(a login) or `email_sha256` (a hashed email) with the default bridging rules, "
                "or another `alt_ids` type identity_edges bridges on. A profile row wins, else "
                "the lookup row names the master.",
            ),
        ] = None,
    ) -> SegmentsResponse:
        with _answering("a segments read"):
            answer = reader.segments(id, key_type=key_type)
        if answer is None:
            raise _unknown(id)
        return SegmentsResponse(**segments_body(answer, key_type))

    @router.post(
        PROFILES_PATH + "/segments",
        summary="Live segments of up to 1000 ids (1 round trip; 2 with alternate ids)",
        response_model=SegmentsBatchResponse,
        responses={413: error_doc(f"The body exceeds {MAX_BATCH_BODY_BYTES} bytes.")},
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": batch_schema}},
            }
        },
    )
    def post_segments(
        body: Annotated[Any, Depends(json_body(MAX_BATCH_BODY_BYTES, "a JSON object of ids"))],
    ) -> SegmentsBatchResponse:
        request = _batch_request(body)
        with _answering("a batch segments read", body_field=True):
            batch = reader.segments_batch(request.ids, key_type=request.key_type)
        return SegmentsBatchResponse(**batch_body(batch))

    @router.get(
        CONNECTED_PATH,
        summary="Whether two profile ids are one person (1 round trip)",
        response_model=ConnectionResponse,
    )
    def get_connected(
        a: Annotated[str, Query(min_length=1, description="A profile id.")],
        b: Annotated[str, Query(min_length=1, description="Another profile id.")],
    ) -> ConnectionResponse:
        with _answering("a connection check"):
            answer = reader.connected(a, b)
        return ConnectionResponse(**asdict(answer))

    @router.get(
        PROFILES_PATH + "/{id}/linked",
        summary="The other ids of a profile's person (1 round trip)",
        response_model=LinkedResponse,
        responses=not_found,
    )
    def get_linked(
        id: IdPath,
        limit: Annotated[int, Query(ge=1, le=MAX_LINKED, description="Most ids listed.")] = 100,
    ) -> LinkedResponse:
        with _answering("a linked-profiles read"):
            answer = reader.linked_profiles(id, limit=limit)
        if answer is None:
            raise _unknown(id)
        return LinkedResponse(**asdict(answer))

    @router.get(
        MASTERS_PATH,
        summary="A page of master profile ids (one server-filtered scan)",
        response_model=MastersResponse,
    )
    def get_masters(
        page_size: Annotated[int, Query(ge=1, le=MAX_PAGE_SIZE)] = 100,
        after: Annotated[
            str | None, Query(min_length=1, description="The previous page's `next_after`.")
        ] = None,
    ) -> MastersResponse:
        with _answering("a masters scan"):
            page = reader.masters(page_size=page_size, after=after)
        return MastersResponse(**asdict(page))

    return router
