"""A schema-driven fuzz run of the whole HTTP API: requests generated from the service's own
``/openapi.json`` by schemathesis, bounded in examples per operation, derandomized (a fixed
seed), against the app with every router (estimates, profiles, the builder's endpoints, erasure)
over a real embedded gateway.

The figure it protects: no generated request, valid or not, gets a server error, and every
response is documented (status code, content type and body schema) in the published schema;
a request the schema calls valid is accepted, except where a rule the schema cannot express
refuses it (see ``DOMAIN_REFUSALS``).
"""

from __future__ import annotations

import happybase
import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    negative_data_rejection,
    positive_data_acceptance,
)
from test_profile_http import SHOP_KEY

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.saved import AUDIENCE_TABLE, SavedAudiences
from profile_store.audiences.saved import ensure_table as ensure_audience_table
from profile_store.audiences.sketch_table import ensure_table as ensure_sketch_table
from profile_store.audiences.sketch_table import sketch_table_opener
from profile_store.hbase.pool import hbase_pool, table_opener
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.table import PROFILE_TABLE
from profile_store.service.app import create_app
from profile_store.service.routes.erasure import ErasureDesk
from profile_store.service.tenants import Tenants

EXAMPLES_PER_OPERATION = 100
ADMIN_KEY = "admin-key-0123456789abcdef"
QUERY_REFUSALS = {(400, "invalid_query"), (422, "unanswerable_query")}
DOMAIN_REFUSALS = {
    ("POST", "/v1/audiences/estimate"): QUERY_REFUSALS,
    ("POST", "/v1/audiences/daily"): QUERY_REFUSALS,
    ("POST", "/v1/audiences/saved"): QUERY_REFUSALS,
    ("PATCH", "/v1/audiences/saved/{audience_id}"): QUERY_REFUSALS,
    ("POST", "/v1/admin/erasure-requests"): {(422, "erasure_refused")},
    ("POST", "/v1/events"): {
        (503, "kafka_not_configured"),
        (422, "no_event_accepted"),
        (400, "no_events"),
    },
}
"""Operations whose schema-valid bodies may still be refused by a rule JSON Schema cannot
state, with the documented refusals they may answer. A query tree: a 400 ``invalid_query`` (a
leaf has a date range or ``last_days``, ``date_from`` is not after ``date_to``, at most 366
days, 8 levels, 32 leaves), or a 422 ``unanswerable_query`` over days that hold no sketches. An
erasure request: a 422 ``erasure_refused`` for a key the identity graph quarantines (``0``,
``null``, a shared login) or a person beyond the bound. Events, on a service without Kafka: a
503 ``kafka_not_configured`` for an accepted event, a 422 ``no_event_accepted`` for events
only ingest's rules refuse (February 30, an app of another tenant), a 400 ``no_events`` for a
body of blank lines. Every other refusal of a schema-valid
body is a finding (``domain_rules_only``)."""


@pytest.fixture(scope="module")
def api_schema(profile_settings, tmp_path_factory):
    """The whole service over the profile data set, an (empty) sketch table and an (empty)
    table of saved audiences; erasure requests go to a lake of their own."""
    connection = happybase.Connection(host=profile_settings.host, port=profile_settings.port)
    try:
        ensure_sketch_table(connection)
        ensure_audience_table(connection)
    finally:
        connection.close()
    shop = {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]}
    tenants = Tenants.from_config({"tenants": [shop], "admin_api_keys": [ADMIN_KEY]})
    lake = LocalLakeStorage(tmp_path_factory.mktemp("fuzz-lake"))
    with hbase_pool(profile_settings) as pool:
        app = create_app(
            AudienceEngine(sketch_table_opener(pool)),
            tenants,
            ProfileReader(table_opener(pool, PROFILE_TABLE)),
            SavedAudiences(table_opener(pool, AUDIENCE_TABLE)),
            ErasureDesk(lake, table_opener(pool, PROFILE_TABLE), ("member_id", "email_sha256")),
        )
        with TestClient(app, raise_server_exceptions=False) as client:
            yield schemathesis.openapi.from_asgi("/openapi.json", client.app)


OPERATIONS = [
    ("GET", "/v1/profiles/{id}"),
    ("GET", "/v1/profiles/{id}/segments"),
    ("POST", "/v1/profiles/segments"),
    ("GET", "/v1/connected"),
    ("GET", "/v1/profiles/{id}/linked"),
    ("GET", "/v1/masters"),
    ("POST", "/v1/admin/erasure-requests"),
    ("GET", "/v1/admin/erasure-requests/{request_id}"),
    ("GET", "/v1/discovery/apps"),
    ("GET", "/v1/discovery/apps/{app_id}/event-types/{event_type}/attributes"),
    ("POST", "/v1/audiences/daily"),
    ("GET", "/v1/audiences/saved"),
    ("POST", "/v1/audiences/saved"),
    ("GET", "/v1/audiences/saved/{audience_id}"),
    ("PATCH", "/v1/audiences/saved/{audience_id}"),
    ("DELETE", "/v1/audiences/saved/{audience_id}"),
    ("POST", "/v1/audiences/overlap"),
    ("POST", "/v1/audiences/estimate"),
    ("GET", "/v1/health"),
    ("POST", "/v1/events"),
]


ACCEPTED = {401, 403, 404, 409}


def domain_rules_only(refusals: set[tuple[int, str]]):
    """``positive_data_acceptance`` for an operation of ``DOMAIN_REFUSALS``: a schema-valid
    request is accepted unless one of its documented domain rules refuses it."""

    def check(ctx, response, case) -> None:
        if case.meta is None or not case.meta.generation.mode.is_positive:
            return
        if response.status_code < 300 or response.status_code in ACCEPTED:
            return
        error = response.json().get("error")
        assert (response.status_code, error) in refusals, (
            f"a schema-valid request was refused: {response.status_code} {response.text}"
        )

    return check


def test_every_operation_is_fuzzed(api_schema):
    published = {(r.ok().method.upper(), r.ok().path) for r in api_schema.get_all_operations()}
    assert published == set(OPERATIONS)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_no_generated_request_gets_a_server_error_or_an_undocumented_answer(
    api_schema, method, path
):
    operation = api_schema[path][method]
    # Query parameters the schema does not name are ignored, as most HTTP APIs do.
    excluded, added = [negative_data_rejection], []
    if (method, path) in DOMAIN_REFUSALS:
        excluded.append(positive_data_acceptance)
        added.append(domain_rules_only(DOMAIN_REFUSALS[method, path]))
    key = ADMIN_KEY if path.startswith("/v1/admin/") else SHOP_KEY
    calls = []

    @given(
        case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE)
        | operation.as_strategy(generation_mode=GenerationMode.NEGATIVE)
    )
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        case.call_and_validate(
            headers={"X-API-Key": key}, excluded_checks=excluded, additional_checks=added
        )
        calls.append(case)

    run()
    assert calls
