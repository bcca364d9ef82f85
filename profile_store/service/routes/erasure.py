"""The admin endpoints of erasure: record a request, and follow it to its report.

```
POST /v1/admin/erasure-requests           {"ids": [...], "key_type": "profile"}  -> 202
GET  /v1/admin/erasure-requests/{id}      pending (what went at once) | completed (report)
```

Only an admin key (``admin_api_keys`` in the tenants file) may call them: a tenant's key gets
403. A request takes effect as ``profiles forget`` does (``forget.py``); a resolution the
identity graph refuses (a quarantined key, more profiles than the bound) is 422, and nothing is
recorded. Every error is the service's JSON error body.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Annotated, Any

import pyarrow as pa
from fastapi import APIRouter, Depends
from fastapi import Path as UrlPath
from pydantic import BaseModel, ConfigDict, Field

from profile_store.erasure.forget import forget
from profile_store.erasure.report import load_report
from profile_store.erasure.requests import (
    DEFAULT_MAX_PROFILES,
    PROFILE_ID,
    REQUESTS,
    ErasureRefused,
    ErasureRequest,
    ErasureRequestError,
    given_ids,
)
from profile_store.lake.storage import LakeStorage
from profile_store.service.conventions import (
    NOT_BLANK,
    ApiError,
    error_doc,
    hbase_failures,
    json_body,
    json_object,
)

ERASURE_PATH = "/v1/admin/erasure-requests"
MAX_IDS = 1000
MAX_ID_LENGTH = 1024
MAX_BODY_BYTES = 256 * 1024
erasure_body = json_body(MAX_BODY_BYTES, "a JSON object of ids")
_REQUEST_ID = re.compile(r"^er-\d{8}T\d{6}-[0-9a-f]{8}$")


@dataclass(frozen=True)
class ErasureDesk:
    """What the endpoints need: the lake, the ``profiles`` table, the bridging key types, and
    the default bound on the person's profiles."""

    storage: LakeStorage
    open_profiles_table: Callable[[], AbstractContextManager]
    key_types: tuple[str, ...]
    max_profiles: int = DEFAULT_MAX_PROFILES


GivenIdText = Annotated[str, Field(min_length=1, max_length=MAX_ID_LENGTH, pattern=NOT_BLANK)]


class ErasureRequestBody(BaseModel):
    """The published schema of the body (read by ``json_body``, checked by ``given_ids``)."""

    model_config = ConfigDict(extra="forbid")
    ids: list[GivenIdText] = Field(
        min_length=1, max_length=MAX_IDS, description=f"The person's ids (1 to {MAX_IDS})."
    )
    key_type: str = Field(
        default=PROFILE_ID,
        description="What the ids are: profile (device or cookie ids), member_id (logins), "
        "email_sha256 or another configured alternate id type.",
    )
    max_profiles: int | None = Field(
        default=None,
        ge=1,
        description="Refuse (422) a person the identity graph resolves to more profiles than "
        "this (default: the service's PROFILES_ERASURE_MAX_PROFILES, else 100).",
    )


class ErasureRequestResponse(BaseModel):
    request_id: str
    status: str = Field(description="pending: the erasure step has not run yet; completed.")
    immediate: dict[str, Any] = Field(description="What the request deleted at once (counts).")
    report: dict[str, Any] | None = Field(
        default=None, description="The audit report, once completed (no personal data)."
    )


def _request_fields(body: Any) -> tuple[list, str, int | None]:
    """The body's ids, key type and bound, their shapes checked (ids' values by
    ``given_ids``)."""
    fields = json_object(body, {"ids", "key_type", "max_profiles"})
    ids, key_type = fields.get("ids"), fields.get("key_type", PROFILE_ID)
    max_profiles = fields.get("max_profiles")
    if isinstance(max_profiles, float) and max_profiles.is_integer():
        max_profiles = int(max_profiles)  # JSON Schema's integer: 5.0 is one
    if not isinstance(ids, list):
        raise ApiError(400, "invalid_request", "ids: required, a list of ids", path="$.ids")
    if not isinstance(key_type, str):
        raise ApiError(400, "invalid_request", "key_type: must be a string", path="$.key_type")
    if len(ids) > MAX_IDS:
        raise ApiError(400, "invalid_request", f"ids: at most {MAX_IDS} ids", path="$.ids")
    if max_profiles is not None and (
        isinstance(max_profiles, bool) or not isinstance(max_profiles, int) or max_profiles < 1
    ):
        raise ApiError(
            400,
            "invalid_request",
            "max_profiles: must be a whole number of at least 1",
            path="$.max_profiles",
        )
    return ids, key_type, max_profiles


def erasure_router(desk: ErasureDesk, current_admin: Callable[..., None]) -> APIRouter:
    body_schema = ErasureRequestBody.model_json_schema()
    body_schema["properties"]["key_type"]["enum"] = [PROFILE_ID, *desk.key_types]
    router = APIRouter(
        tags=["erasure"],
        dependencies=[Depends(current_admin)],
        responses={
            401: error_doc("Missing or unknown API key."),
            403: error_doc("A tenant's key: erasure needs an admin key."),
            503: error_doc("HBase cannot be reached."),
        },
    )

    @router.post(
        ERASURE_PATH,
        summary="Forget a person: their HBase rows at once, the lake at the next erasure run",
        status_code=202,
        response_model=ErasureRequestResponse,
        responses={
            400: error_doc(
                "No ids, too many, an empty id, an unknown key_type or a max_profiles below 1."
            ),
            413: error_doc(f"The body exceeds {MAX_BODY_BYTES} bytes."),
            422: error_doc(
                "Refused, nothing recorded: a given key is quarantined by the identity graph "
                "(a shared login, a placeholder), or the person resolves to more profiles "
                "than max_profiles."
            ),
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "content": {"application/json": {"schema": body_schema}},
            }
        },
    )
    def request_erasure(body: Annotated[Any, Depends(erasure_body)]) -> ErasureRequestResponse:
        ids, key_type, max_profiles = _request_fields(body)
        try:
            given = given_ids(ids, key_type, desk.key_types)
        except ErasureRequestError as exc:
            field = str(exc).split(":")[0].split("[")[0]
            raise ApiError(400, "invalid_request", str(exc), path=f"$.{field}") from None
        bound = max_profiles or desk.max_profiles
        try:
            with hbase_failures("an erasure request"):
                result = forget(desk.storage, desk.open_profiles_table, given, None, bound)
        except ErasureRefused as exc:
            raise ApiError(422, "erasure_refused", str(exc), path="$.ids") from None
        except pa.ArrowException as exc:
            raise ApiError(503, "lake_unavailable", f"lake: identity areas: {exc}") from None
        return ErasureRequestResponse(
            request_id=result.request.request_id,
            status="pending",
            immediate=result.request.immediate,
        )

    @router.get(
        ERASURE_PATH + "/{request_id}",
        summary="An erasure request: pending, or completed with its report",
        response_model=ErasureRequestResponse,
        responses={404: error_doc("No such request.")},
    )
    def erasure_status(
        request_id: Annotated[str, UrlPath(description="The id a request returned.")],
    ) -> ErasureRequestResponse:
        if not _REQUEST_ID.match(request_id):
            raise ApiError(404, "not_found", f"no erasure request {request_id!r}")
        report = load_report(desk.storage, request_id)
        if report is not None:
            return ErasureRequestResponse(
                request_id=request_id,
                status="completed",
                immediate=report["immediate"],
                report=report,
            )
        path = f"{REQUESTS}/{request_id}.json"
        if not desk.storage.exists(path):
            raise ApiError(404, "not_found", f"no erasure request {request_id!r}")
        pending = ErasureRequest.from_json(desk.storage.read_bytes(path))
        return ErasureRequestResponse(
            request_id=request_id, status="pending", immediate=pending.immediate
        )

    return router
