"""The HTTP service put together: every router, under one set of API keys, one error body and
one edge, over one HBase pool.

``create_app`` is the one place that knows every router: the audience estimate and health
(``routes/audiences``), and, when their parts are given, the profile reads
(``routes/profiles``), the audience builder with its page (``routes/builder``,
``routes/builder_page``) and the admin endpoints of erasure (``routes/erasure``).
"""

from typing import Any

from fastapi import FastAPI
from fastapi.responses import RedirectResponse

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.saved import SavedAudiences
from profile_store.profiles.reads import ProfileReader
from profile_store.realtime.collector import EventCollector
from profile_store.service.api_docs import DOCS_PATH, install_offline_docs
from profile_store.service.conventions import (
    admin_dependency,
    document_request_errors,
    install_error_handlers,
    install_options,
    sender_dependency,
    tenant_dependency,
)
from profile_store.service.edge import install_edge
from profile_store.service.routes.audiences import audience_router, query_schemas
from profile_store.service.routes.builder import builder_router
from profile_store.service.routes.builder_page import install_builder_page
from profile_store.service.routes.erasure import ErasureDesk, erasure_router
from profile_store.service.routes.events import events_router
from profile_store.service.routes.profiles import profile_router
from profile_store.service.tenants import Tenants

API_VERSION = "1.0.0"

DESCRIPTION = """\
Unique-user audience estimates from the HBase sketch tables.

Send the audience query as the JSON body: a leaf
(`app_id`, `event_type`, `date_from`, `date_to`, optional `min_count` and `attributes`) or a
`union` / `intersection` / `difference` of at least two sub-queries (at most 8 levels and 32
leaves). Authenticate with the `X-API-Key` header; a key may query only its tenant's apps.

**Relative ranges.** Instead of `date_from` and `date_to`, a leaf may give `"last_days": N`:
the N days ending with the latest built day (the last day the daily run finished; not today),
so that a saved audience means the same thing every day. The answer's `leaf_dates` gives the
dates each leaf was answered over. A range may hold only built days: a day not built yet is a
422 `unanswerable_query` (`GET /v1/discovery/apps` lists the built days).

**Bounds and exactness.** `estimate` is the estimated number of unique users, with a ~95%
interval `lower_95` to `upper_95` (2 standard deviations of the sketch's error). When every set
involved was small enough to be counted exactly, `exact` is true and the three are equal.

**Errors** always have the shape `{"error", "message", "path"}`, where `error` is a stable code,
`message` says what is wrong and `path` is the JSON path of the offending value, e.g.
`$.difference[0].intersection[1].min_count` (documented as `ErrorResponse` for every status).
"""

PROFILES_TAG = (
    "Profile reads for bidders: segments by any id of a person, connections, linked ids, "
    "masters. Any tenant's API key may read them."
)


def create_app(
    engine: AudienceEngine,
    tenants: Tenants,
    profiles: ProfileReader | None = None,
    saved: SavedAudiences | None = None,
    erasure: ErasureDesk | None = None,
    collector: EventCollector | None = None,
) -> FastAPI:
    """The service answering from ``engine``, with access controlled by ``tenants``.

    With ``profiles``, the same app also serves the profile reads (``routes/profiles.py``)
    under the same API keys and error body: one service, one port, one HBase pool. With
    ``saved``, it serves the audience builder: its page at ``/`` and its endpoints
    (``routes/builder.py``: discovery, daily charts, saved audiences, overlaps). With
    ``erasure``, the admin endpoints of erasure requests (``routes/erasure.py``). The
    collector (``routes/events.py``) is always there; without ``collector`` (Kafka not
    configured) it checks events and answers 503 instead of accepting them.
    """
    tags = [{"name": "audiences", "description": "Audience size estimates"}]
    if saved is not None:
        tags += [
            {"name": "discovery", "description": "What audiences can be built from"},
            {"name": "saved audiences", "description": "Named audiences per tenant"},
        ]
    if profiles is not None:
        tags.append({"name": "profiles", "description": PROFILES_TAG})
    if erasure is not None:
        tags.append({"name": "erasure", "description": "Forget a person (admin keys only)"})
    tags.append({"name": "events", "description": "The collector: events into Kafka"})
    app = FastAPI(
        title="Audience estimates" if profiles is None else "Audiences and profiles",
        version=API_VERSION,
        description=DESCRIPTION,
        openapi_tags=[*tags, {"name": "operations", "description": "Service health"}],
        docs_url=None,
        redoc_url=None,
    )
    install_offline_docs(app)
    install_error_handlers(app)
    install_options(app)
    current_tenant = tenant_dependency(tenants)
    if profiles is not None:
        app.include_router(profile_router(profiles, current_tenant))
    if erasure is not None:
        app.include_router(erasure_router(erasure, admin_dependency(tenants)))
    app.include_router(events_router(collector or EventCollector(None), sender_dependency(tenants)))
    if saved is not None:
        app.include_router(builder_router(engine, saved, current_tenant))
        install_builder_page(app)
    else:

        @app.get("/", include_in_schema=False)
        def root() -> RedirectResponse:
            return RedirectResponse(DOCS_PATH)

    app.include_router(audience_router(engine, current_tenant))

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = FastAPI.openapi(app)  # also kept as app.openapi_schema
        schema.setdefault("components", {}).setdefault("schemas", {}).update(query_schemas())
        document_request_errors(schema)
        return schema

    # FastAPI's documented way to customise the schema: replace app.openapi.
    app.openapi = openapi  # type: ignore[method-assign]
    install_edge(app, tenants)
    return app
