"""The endpoints behind the audience builder page: discovery, daily charts, saved audiences and
their overlaps. An ``APIRouter`` that ``create_app`` includes, with the same keys and errors.

| method and path | answers |
| --- | --- |
| ``GET /v1/discovery/apps`` | the tenant's apps, event types and built days; every built day |
| ``GET /v1/discovery/apps/{app}/event-types/{event}/attributes`` | kept attributes, values, users |
| ``POST /v1/audiences/daily`` | the query applied to each day of its range |
| ``GET, POST /v1/audiences/saved`` | the tenant's saved audiences; save one (201) |
| ``GET, PATCH, DELETE /v1/audiences/saved/{id}`` | one saved audience |
| ``POST /v1/audiences/overlap`` | 2-4 saved audiences: sizes and each pair's intersection |
"""

import contextlib
from collections.abc import Callable, Iterator
from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response
from fastapi import Path as UrlPath
from pydantic import BaseModel, ConfigDict, Field

from profile_store.audiences.admission import admissible_query
from profile_store.audiences.discovery import NotBuilt, catalog_and_days, event_attributes
from profile_store.audiences.engine import AudienceEngine, OverlapQueryError
from profile_store.audiences.query import Node, QueryError
from profile_store.audiences.saved import (
    MAX_NAME_LENGTH,
    MAX_TTL_DAYS,
    Activation,
    ConcurrentChange,
    DuplicateName,
    SavedAudience,
    SavedAudienceError,
    SavedAudiences,
    SegmentTaken,
    UnknownAudience,
)
from profile_store.service.conventions import (
    NOT_BLANK,
    ApiError,
    error_doc,
    hbase_failures,
    json_body,
    json_object,
)
from profile_store.service.routes.refusals import unanswerable, unanswerable_doc
from profile_store.service.tenants import ForbiddenApp, Tenant

DISCOVERY_PATH = "/v1/discovery/apps"
DAILY_PATH = "/v1/audiences/daily"
SAVED_PATH = "/v1/audiences/saved"
OVERLAP_PATH = "/v1/audiences/overlap"
MAX_OVERLAP = 4
MAX_BODY_BYTES = 64 * 1024
builder_body = json_body(MAX_BODY_BYTES, "a JSON object")
TOO_LARGE = error_doc(f"The body exceeds {MAX_BODY_BYTES} bytes.")
QUERY_SCHEMA = {"$ref": "#/components/schemas/AudienceQuery"}
"""The query tree's schema, which ``create_app`` publishes under components."""


def admit(tree: Any, tenant: Tenant, engine: AudienceEngine, where: str = "") -> Node:
    """The parsed query, or the 400 / 403 that says why not; ``where`` prefixes JSON paths
    (``$.query`` when the tree sits inside a body)."""
    try:
        query = admissible_query(tree, engine.limits)
    except QueryError as exc:
        raise ApiError(400, "invalid_query", exc.problem, _within(where, exc.path)) from None
    try:
        tenant.authorize(query)
    except ForbiddenApp as exc:
        message = f"this API key may not query app {exc.app_id!r}"
        raise ApiError(403, "forbidden_app", message, _within(where, exc.path)) from None
    return query


def _within(where: str, path: str) -> str:
    return where + path[1:] if where else path


@contextlib.contextmanager
def answering(action: str, where: str = "") -> Iterator[None]:
    """HBase failures as 502/503, a query the sketches cannot answer as 422."""
    try:
        with hbase_failures(action):
            yield
    except QueryError as exc:
        raise unanswerable(exc, _within(where, exc.path)) from None


class Bounds95(BaseModel):
    estimate: int = Field(description="Estimated unique users, rounded.")
    lower_95: int = Field(description="Lower ~95% bound (2 standard deviations), rounded down.")
    upper_95: int = Field(description="Upper bound of the same interval, rounded up.")


class DayAnswer(Bounds95):
    day: date


class DailyResponse(BaseModel):
    days: list[DayAnswer] = Field(
        description="Per day of the leaves' range: the query with every leaf narrowed to that "
        "one day (a leaf whose range misses the day is an empty set)."
    )


class ActivationBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    segment: str = Field(
        pattern=r"^[A-Za-z0-9_.\-]{1,64}$",
        description="Segment id written to profiles: 1-64 of A-Z a-z 0-9 _ . -",
    )
    ttl_days: float = Field(
        gt=0,
        le=MAX_TTL_DAYS,
        description="Membership lasts this long after each run finding it.",
    )
    active: bool = Field(default=True, description="False stops renewal; memberships expire.")


AudienceName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_NAME_LENGTH,
        pattern=NOT_BLANK,
        description="Unique in the tenant, ignoring case; leading and trailing spaces dropped.",
    ),
]


class SaveAudienceBody(BaseModel):
    """The published schema of a save (read by ``json_body``, checked field by field)."""

    model_config = ConfigDict(extra="forbid", title="SaveAudience")
    name: AudienceName
    query: dict = Field(description="The audience query tree.")
    activation: ActivationBody | None = Field(default=None, description="Deliver to profiles.")


class ChangeAudienceBody(BaseModel):
    """The published schema of a change: only the fields given change."""

    model_config = ConfigDict(extra="forbid", title="ChangeAudience")
    name: AudienceName | None = None
    query: dict | None = Field(default=None, description="The new query tree.")
    activation: ActivationBody | None = Field(default=None, description="null removes it.")


class OverlapBody(BaseModel):
    model_config = ConfigDict(extra="forbid", title="Overlap")
    ids: list[str] = Field(
        min_length=2,
        max_length=MAX_OVERLAP,
        json_schema_extra={"uniqueItems": True},
        description="Ids of 2-4 saved audiences of the tenant.",
    )


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """``model``'s JSON schema as a request body; a ``query`` field is the query tree. Fields
    that may be omitted are not nullable unless null means something (``activation``)."""
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    schema.pop("$defs", None)  # ActivationBody: published with the responses
    properties = schema["properties"]
    if "query" in properties:
        properties["query"] = {**QUERY_SCHEMA}
    if "name" in properties and "anyOf" in properties["name"]:
        properties["name"] = properties["name"]["anyOf"][0]
    return schema


def _request_body(schema: dict[str, Any]) -> dict[str, Any]:
    """``openapi_extra`` documenting a required JSON body of ``schema``."""
    content = {"application/json": {"schema": schema}}
    return {"requestBody": {"required": True, "content": content}}


class SavedAudienceResponse(BaseModel):
    id: str
    name: str
    query: dict = Field(description="The audience query tree, as saved.")
    created: str = Field(description="ISO-8601 UTC.")
    updated: str = Field(description="ISO-8601 UTC.")
    activation: ActivationBody | None


class SavedListResponse(BaseModel):
    audiences: list[SavedAudienceResponse]


class OverlapAudience(Bounds95):
    id: str
    name: str


class OverlapPair(Bounds95):
    first: str = Field(description="Id of one audience.")
    second: str = Field(description="Id of the other.")


class OverlapResponse(BaseModel):
    audiences: list[OverlapAudience]
    pairs: list[OverlapPair] = Field(description="Users in both audiences of each pair.")


def _activation(body: dict, field: str = "activation") -> Activation | None:
    value = body.get(field)
    if value is None:
        return None
    try:
        return Activation.from_dict(value, field)
    except SavedAudienceError as exc:
        raise ApiError(400, "invalid_request", exc.problem, f"$.{exc.field}") from None


@contextlib.contextmanager
def _store_errors() -> Iterator[None]:
    """The store's refusals as 404 / 409 / 400, HBase failures as 502 / 503."""
    try:
        with hbase_failures("a saved audience"):
            yield
    except UnknownAudience as exc:
        raise ApiError(404, "unknown_audience", f"no saved audience {exc.args[0]!r}") from None
    except DuplicateName as exc:
        raise ApiError(409, "duplicate_name", exc.problem, f"$.{exc.field}") from None
    except SegmentTaken as exc:
        raise ApiError(409, "segment_taken", exc.problem, f"$.{exc.field}") from None
    except ConcurrentChange as exc:
        raise ApiError(409, "concurrent_change", exc.problem) from None
    except SavedAudienceError as exc:
        raise ApiError(400, "invalid_request", exc.problem, f"$.{exc.field}") from None


def _saved(audience: SavedAudience) -> SavedAudienceResponse:
    return SavedAudienceResponse(**audience.to_dict())


def builder_router(
    engine: AudienceEngine, saved: SavedAudiences, current_tenant: Callable[..., Tenant]
) -> APIRouter:
    """Discovery, daily charts, saved audiences and overlaps, scoped to the caller's tenant."""
    router = APIRouter(
        responses={
            401: error_doc("Missing or unknown API key."),
            502: error_doc("HBase answered with an error."),
            503: error_doc("HBase cannot be reached."),
        }
    )
    TenantDep = Annotated[Tenant, Depends(current_tenant)]
    AudienceId = Annotated[str, UrlPath(description="A saved audience's id.")]

    @router.get(DISCOVERY_PATH, tags=["discovery"], summary="The tenant's apps and event types")
    def apps(tenant: TenantDep) -> dict:
        """Each app the key may query, its event types and the built days with their users;
        every built day (a query over other days is refused) and the latest (``last_days``
        leaves end there); one HBase scan."""
        with hbase_failures("discovery"), engine.open_table() as table:
            catalog, days = catalog_and_days(table, tenant.may_query)
        return {
            "latest_built_day": days[-1].isoformat() if days else None,
            "built_days": [day.isoformat() for day in days],
            "apps": [app.to_dict() for app in catalog],
        }

    @router.get(
        DISCOVERY_PATH + "/{app_id}/event-types/{event_type}/attributes",
        tags=["discovery"],
        summary="Kept attributes of an event type, with values and users",
        responses={
            403: error_doc("The app belongs to another tenant."),
            404: error_doc("No built day of this app and event type (or not that day)."),
        },
    )
    def attributes(
        tenant: TenantDep,
        app_id: str,
        event_type: str,
        day: Annotated[
            date | None, Query(description="UTC day; default the latest built day with users.")
        ] = None,
        max_values: Annotated[
            int, Query(ge=1, le=1000, description="Values per attribute, most users first.")
        ] = 100,
    ) -> dict:
        """Attributes kept on the day (only these can be filtered on), each value's estimated
        daily users (theta estimate, ~3% at lg_k 12, 95%); one get and one short scan."""
        if not tenant.may_query(app_id):
            raise ApiError(403, "forbidden_app", f"this API key may not query app {app_id!r}")
        try:
            with hbase_failures("discovery"), engine.open_table() as table:
                found = event_attributes(table, app_id, event_type, day, max_values)
        except NotBuilt as exc:
            raise ApiError(404, "not_built", str(exc)) from None
        return found.to_dict()

    @router.post(
        DAILY_PATH,
        tags=["audiences"],
        summary="The audience per day of its range (for a chart)",
        response_model=DailyResponse,
        responses={
            400: error_doc("Not a valid query."),
            403: error_doc("The query names an app of another tenant."),
            413: TOO_LARGE,
            422: unanswerable_doc("Unanswerable (unbuilt day, trimmed attribute, over 92 days)."),
        },
        openapi_extra=_request_body(QUERY_SCHEMA),
    )
    def daily(tenant: TenantDep, tree: Annotated[Any, Depends(builder_body)]) -> DailyResponse:
        admit(tree, tenant, engine)
        with answering("a daily chart"):
            days = engine.daily(tree)
        return DailyResponse(days=[DayAnswer(**d.to_dict()) for d in days])

    @router.get(SAVED_PATH, tags=["saved audiences"], summary="The tenant's saved audiences")
    def list_saved(tenant: TenantDep) -> SavedListResponse:
        with _store_errors():
            found = saved.list(tenant.name)
        return SavedListResponse(audiences=[_saved(a) for a in found])

    @router.post(
        SAVED_PATH,
        tags=["saved audiences"],
        summary="Save an audience",
        status_code=201,
        response_model=SavedAudienceResponse,
        responses={
            400: error_doc("A field is missing or invalid; `path` names it."),
            403: error_doc("The query names an app of another tenant."),
            409: error_doc(
                "`duplicate_name`: the tenant has an audience of this name; `segment_taken`: "
                "the segment id is not available (whoever holds it); `concurrent_change`: "
                "another change of the audience is under way."
            ),
            413: TOO_LARGE,
        },
        openapi_extra=_request_body(_body_schema(SaveAudienceBody)),
    )
    def create_saved(
        tenant: TenantDep, body: Annotated[Any, Depends(builder_body)]
    ) -> SavedAudienceResponse:
        body = json_object(body, {"name", "query", "activation"})
        if "query" not in body:
            raise ApiError(400, "invalid_request", "required, the audience query", "$.query")
        admit(body["query"], tenant, engine, "$.query")
        activation = _activation(body)
        with _store_errors():
            audience = saved.create(tenant.name, body.get("name"), body["query"], activation)
        return _saved(audience)

    @router.get(
        SAVED_PATH + "/{audience_id}",
        tags=["saved audiences"],
        summary="One saved audience",
        responses={404: error_doc("No such audience in the tenant.")},
    )
    def get_saved(tenant: TenantDep, audience_id: AudienceId) -> SavedAudienceResponse:
        with _store_errors():
            return _saved(saved.get(tenant.name, audience_id))

    @router.patch(
        SAVED_PATH + "/{audience_id}",
        tags=["saved audiences"],
        summary="Rename, change the query, or (de)activate",
        response_model=SavedAudienceResponse,
        responses={
            400: error_doc("A field is invalid; `path` names it."),
            403: error_doc("The query names an app of another tenant."),
            404: error_doc("No such audience in the tenant."),
            409: error_doc(
                "`duplicate_name`: the tenant has an audience of this name; `segment_taken`: "
                "the segment id is not available (whoever holds it); `concurrent_change`: "
                "another change of the audience is under way."
            ),
            413: TOO_LARGE,
        },
        openapi_extra=_request_body(_body_schema(ChangeAudienceBody)),
    )
    def update_saved(
        tenant: TenantDep, audience_id: AudienceId, body: Annotated[Any, Depends(builder_body)]
    ) -> SavedAudienceResponse:
        body = json_object(body, {"name", "query", "activation"})
        if "query" in body:
            admit(body["query"], tenant, engine, "$.query")
        activation = _activation(body) if "activation" in body else ...
        with _store_errors():
            audience = saved.update(
                tenant.name,
                audience_id,
                name=body.get("name"),
                query=body.get("query"),
                activation=activation,
            )
        return _saved(audience)

    @router.delete(
        SAVED_PATH + "/{audience_id}",
        tags=["saved audiences"],
        summary="Delete a saved audience",
        status_code=204,
        responses={
            404: error_doc("No such audience in the tenant."),
            409: error_doc("`concurrent_change`: another change of it is under way."),
        },
    )
    def delete_saved(tenant: TenantDep, audience_id: AudienceId) -> Response:
        with _store_errors():
            saved.delete(tenant.name, audience_id)
        return Response(status_code=204)

    @router.post(
        OVERLAP_PATH,
        tags=["saved audiences"],
        summary="Sizes of 2-4 saved audiences and of each pair's intersection",
        response_model=OverlapResponse,
        responses={
            400: error_doc("`ids` is not a list of 2-4 distinct audience ids."),
            404: error_doc("An id is not a saved audience of the tenant."),
            413: TOO_LARGE,
            422: unanswerable_doc("An audience cannot be answered today; `path` names it."),
        },
        openapi_extra=_request_body(_body_schema(OverlapBody)),
    )
    def overlap(tenant: TenantDep, body: Annotated[Any, Depends(builder_body)]) -> OverlapResponse:
        ids = json_object(body, {"ids"}).get("ids")
        if (
            not isinstance(ids, list)
            or not 2 <= len(ids) <= MAX_OVERLAP
            or not all(isinstance(i, str) for i in ids)
            or len(set(ids)) != len(ids)
        ):
            raise ApiError(
                400, "invalid_request", f"expected 2-{MAX_OVERLAP} distinct audience ids", "$.ids"
            )
        with _store_errors():
            audiences = [saved.get(tenant.name, i) for i in ids]
        for i, audience in enumerate(audiences):
            admit(audience.query, tenant, engine, f"$.ids[{i}]")
        try:
            with hbase_failures("an overlap"):
                matrix = engine.overlap([a.query for a in audiences])
        except OverlapQueryError as exc:
            message = f"audience {audiences[exc.index].name!r}, at {exc.path}: {exc.problem}"
            raise unanswerable(exc.error, f"$.ids[{exc.index}]", message) from None
        return OverlapResponse(
            audiences=[
                OverlapAudience(id=a.id, name=a.name, **matrix[i][i].to_dict())
                for i, a in enumerate(audiences)
            ],
            pairs=[
                OverlapPair(first=a.id, second=b.id, **matrix[i][j].to_dict())
                for i, a in enumerate(audiences)
                for j, b in enumerate(audiences)
                if i < j
            ],
        )

    return router
