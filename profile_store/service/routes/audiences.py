"""The audience estimate and the health check: ``POST /v1/audiences/estimate``, ``GET /v1/health``.

Every request carries an API key (``X-API-Key``) that maps to a tenant and the apps it may query
(``service/tenants.py``). The body is the audience query itself, the JSON tree of
``audiences/query.py``. Every error has one shape, ``{"error": code, "message": text, "path":
JSON path or null}``:

| status | error | when |
| --- | --- | --- |
| 400 | ``invalid_json`` | the body is empty, not UTF-8, not JSON, or nested too deeply to decode |
| 400 | ``invalid_query`` | the JSON is not a valid query; ``path`` locates the fault |
| 400 | ``invalid_request`` | a header or parameter FastAPI validates is malformed |
| 401 | ``unauthorized`` | ``X-API-Key`` is missing or unknown |
| 403 | ``forbidden_app`` | a leaf names an app outside the tenant; ``path`` is its ``app_id`` |
| 413 | ``body_too_large`` | the body exceeds ``MAX_BODY_BYTES`` |
| 422 | ``unanswerable_query`` | valid, but unanswerable (day not built, attribute trimmed) |
| 502 | ``hbase_error`` | HBase answered with an error |
| 503 | ``hbase_unavailable`` | HBase cannot be reached |

The endpoints are plain functions, so FastAPI runs them in its thread pool; each estimate takes
a connection from the happybase pool for the duration of its scans. The shared plumbing is
``service/conventions.py``; ``service/app.py`` mounts this router beside the others.
"""

import logging
import time
from collections.abc import Callable
from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter
from pydantic.config import JsonDict
from thriftpy2.thrift import TException
from thriftpy2.transport import TTransportException
from typing_extensions import TypeAliasType

from profile_store.audiences.admission import MAX_MIN_COUNT
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.query import MAX_TEXT_LENGTH, leaves
from profile_store.service.conventions import error_doc, hbase_reason, json_body
from profile_store.service.metrics import record_hbase_error
from profile_store.service.routes.builder import admit, answering
from profile_store.service.routes.refusals import unanswerable_doc
from profile_store.service.tenants import Tenant

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 64 * 1024
query_body = json_body(MAX_BODY_BYTES, "a JSON audience query")
ESTIMATE_PATH = "/v1/audiences/estimate"
HEALTH_PATH = "/v1/health"


# --- documentation of the query tree (validation is query.parse_query, with JSON paths) -------


NonEmptyText = Annotated[str, StringConstraints(min_length=1, max_length=MAX_TEXT_LENGTH)]


SHOES_IN_CART_3_TIMES: JsonDict = {
    "app_id": "com.shop",
    "event_type": "add_to_cart",
    "date_from": "2026-11-01",
    "date_to": "2026-11-30",
    "min_count": 3,
    "attributes": {"product_type": "shoes"},
}
"""The example leaf of the documentation: a leaf alone, and inside the funnel example."""


class LeafQuery(BaseModel):
    """Users of one app who sent one event type within a date range (UTC days, inclusive)."""

    model_config = ConfigDict(
        extra="forbid",
        title="Leaf",
        json_schema_extra={"examples": [SHOES_IN_CART_3_TIMES]},
    )

    app_id: str = Field(
        min_length=1,
        max_length=MAX_TEXT_LENGTH,
        description="The app; the API key's tenant must own it.",
    )
    event_type: str = Field(
        min_length=1, max_length=MAX_TEXT_LENGTH, description="The event type, e.g. `purchase`."
    )
    date_from: date | None = Field(
        default=None, description="First UTC day (YYYY-MM-DD); with `date_to`, or `last_days`."
    )
    date_to: date | None = Field(
        default=None, description="Last UTC day (YYYY-MM-DD), at most 366 days after."
    )
    last_days: int | None = Field(
        default=None,
        ge=1,
        le=366,
        description="Instead of `date_from`/`date_to`: the N days ending with the latest built "
        "day, so that a saved audience means the same thing every day.",
    )
    min_count: int | None = Field(
        default=None,
        ge=1,
        le=MAX_MIN_COUNT,
        description="Only users with at least this many such events in the range.",
    )
    attributes: dict[NonEmptyText, NonEmptyText] = Field(
        default_factory=dict,
        description="Event attribute filters (name: value, all must match). Filtering on an "
        "attribute that was trimmed or never seen is a 422, never a silently wrong number.",
    )


class UnionQuery(BaseModel):
    """Users in any of the sub-queries."""

    model_config = ConfigDict(extra="forbid", title="Union")
    union: list["AudienceQuery"] = Field(min_length=2)


class IntersectionQuery(BaseModel):
    """Users in every sub-query."""

    model_config = ConfigDict(extra="forbid", title="Intersection")
    intersection: list["AudienceQuery"] = Field(min_length=2)


class DifferenceQuery(BaseModel):
    """Users in the first sub-query and in none of the others."""

    model_config = ConfigDict(extra="forbid", title="Difference")
    difference: list["AudienceQuery"] = Field(min_length=2)


AudienceQuery = TypeAliasType(
    "AudienceQuery", LeafQuery | UnionQuery | IntersectionQuery | DifferenceQuery
)
for _model in (UnionQuery, IntersectionQuery, DifferenceQuery):
    _model.model_rebuild()

QUERY_EXAMPLES: dict[str, dict[str, Any]] = {
    "leaf": {
        "summary": "Users who purchased in November",
        "value": {
            "app_id": "com.shop",
            "event_type": "purchase",
            "date_from": "2026-11-01",
            "date_to": "2026-11-30",
        },
    },
    "funnel": {
        "summary": "Installed, added shoes to the cart 3+ times, never purchased",
        "value": {
            "difference": [
                {
                    "intersection": [
                        {
                            "app_id": "com.shop",
                            "event_type": "install",
                            "date_from": "2026-11-01",
                            "date_to": "2026-11-30",
                        },
                        SHOES_IN_CART_3_TIMES,
                    ]
                },
                {
                    "app_id": "com.shop",
                    "event_type": "purchase",
                    "date_from": "2026-11-01",
                    "date_to": "2026-11-30",
                },
            ]
        },
    },
}


def query_schemas() -> dict[str, Any]:
    """OpenAPI component schemas of the query tree, ``AudienceQuery`` and its node types."""
    schema = TypeAdapter(AudienceQuery).json_schema(ref_template="#/components/schemas/{model}")
    return schema["$defs"]


# --- response models ----------------------------------------------------------------------------


class LeafDates(BaseModel):
    """The days one leaf was answered over."""

    path: str = Field(description="JSON path of the leaf in the query.")
    date_from: date
    date_to: date
    last_days: int | None = Field(
        default=None, description="Present when the leaf asked for its last N built days."
    )


class AudienceEstimateResponse(BaseModel):
    """The audience size with its 95% bounds."""

    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "estimate": 48212,
                    "lower_95": 46802,
                    "upper_95": 49661,
                    "estimate_unrounded": 48211.7,
                    "exact": False,
                    "rows_read": 64,
                    "elapsed_ms": 12.4,
                    "warnings": [],
                    "leaf_dates": [
                        {
                            "path": "$",
                            "date_from": "2026-11-24",
                            "date_to": "2026-11-30",
                            "last_days": 7,
                        }
                    ],
                }
            ]
        }
    )

    estimate: int = Field(description="Estimated number of unique users, rounded.")
    lower_95: int = Field(
        description="Lower bound of the ~95% confidence interval (2 standard deviations), "
        "rounded down."
    )
    upper_95: int = Field(description="Upper bound of the same interval, rounded up.")
    estimate_unrounded: float = Field(
        description="The sketch's estimate before rounding (for averaging many answers)."
    )
    exact: bool = Field(description="True when every set was small enough to count exactly.")
    rows_read: int = Field(description="Sketch rows scanned in HBase.")
    elapsed_ms: float = Field(description="Time taken by the engine, in milliseconds.")
    warnings: list[str] = Field(description="Caveats, e.g. too few samples after intersection.")
    leaf_dates: list[LeafDates] = Field(
        description="Each leaf's date range as answered: a `last_days` leaf resolved against "
        "the latest built day."
    )


class HealthResponse(BaseModel):
    """Whether the service can read the sketch table."""

    model_config = ConfigDict(
        json_schema_extra={"examples": [{"status": "ok", "detail": "", "elapsed_ms": 1.8}]}
    )

    status: Literal["ok", "unavailable"]
    detail: str = Field(description="Empty when ok; otherwise what failed.")
    elapsed_ms: float = Field(description="Time the HBase round trip took.")


# --- the endpoints ------------------------------------------------------------------------------


def audience_router(engine: AudienceEngine, current_tenant: Callable[..., Tenant]) -> APIRouter:
    """``POST /v1/audiences/estimate`` and ``GET /v1/health`` over ``engine``."""
    router = APIRouter()

    @router.post(
        ESTIMATE_PATH,
        tags=["audiences"],
        summary="Estimate an audience's size",
        response_model=AudienceEstimateResponse,
        responses={
            400: error_doc("Not JSON, or not a valid query (`path` locates the fault)."),
            401: error_doc("Missing or unknown API key."),
            403: error_doc("The query names an app of another tenant."),
            413: error_doc(f"The body exceeds {MAX_BODY_BYTES} bytes."),
            422: unanswerable_doc(
                "A valid query the sketches cannot answer (unbuilt day, trimmed or never seen "
                "attribute): each cause with its days, and the range that can be answered."
            ),
            502: error_doc("HBase answered with an error."),
            503: error_doc("HBase cannot be reached."),
        },
        openapi_extra={
            "requestBody": {
                "required": True,
                "description": "The audience query tree.",
                "content": {
                    "application/json": {
                        "schema": {"$ref": "#/components/schemas/AudienceQuery"},
                        "examples": QUERY_EXAMPLES,
                    }
                },
            }
        },
    )
    def estimate(
        tenant: Annotated[Tenant, Depends(current_tenant)],
        tree: Annotated[Any, Depends(query_body)],
    ) -> AudienceEstimateResponse:
        query = admit(tree, tenant, engine)
        with answering("an estimate"):
            answer = engine.estimate(tree)
        logger.info(
            "estimate tenant=%s leaves=%d rows_read=%d elapsed_ms=%.1f",
            tenant.name,
            len(leaves(query)),
            answer.rows_read,
            answer.elapsed_ms,
        )
        return AudienceEstimateResponse(**answer.to_dict())

    @router.get(
        HEALTH_PATH,
        tags=["operations"],
        summary="Check that HBase and the sketch table answer",
        response_model=HealthResponse,
        responses={503: {"model": HealthResponse, "description": "HBase is not usable."}},
    )
    def health() -> JSONResponse:
        started = time.perf_counter()
        status: Literal["ok", "unavailable"] = "ok"
        detail, code = "", 200
        try:
            with engine.open_table() as table:
                table.families()
        except (TTransportException, OSError) as exc:
            logger.warning("health: HBase unreachable: %r", exc)
            record_hbase_error("unavailable")
            status, detail, code = "unavailable", "HBase cannot be reached", 503
        except TException as exc:
            logger.warning("health: sketch table unreadable: %r", exc)
            record_hbase_error("error")
            status, detail = "unavailable", f"sketch table unreadable: {hbase_reason(exc)}"
            code = 503
        elapsed_ms = (time.perf_counter() - started) * 1000
        body = HealthResponse(status=status, detail=detail, elapsed_ms=elapsed_ms)
        return JSONResponse(body.model_dump(), status_code=code)

    return router
