"""The audience HTTP API against the real app and a real embedded HBase gateway (conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from profile_store.audiences.admission import admissible_query
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.query import LEAF_FIELDS, parse_query
from profile_store.audiences.sketch_table import sketch_table_opener
from profile_store.hbase.pool import hbase_pool
from profile_store.hbase.settings import HBaseSettings
from profile_store.service.app import create_app
from profile_store.service.routes.audiences import MAX_BODY_BYTES
from profile_store.service.tenants import ForbiddenApp, TenantConfigError, Tenants

SHOP_KEY = "shop-key-0123456789abcdef"
RIVAL_KEY = "rival-key-0123456789abcdef"
TENANTS = {
    "tenants": [
        {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]},
        {"name": "rival", "api_keys": [RIVAL_KEY], "app_ids": ["com.rival"]},
    ]
}
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def leaf(event: str, app: str = "com.shop", **extra) -> dict:
    return {
        "app_id": app,
        "event_type": event,
        "date_from": "2026-11-01",
        "date_to": "2026-11-02",
        **extra,
    }


@pytest.fixture(scope="module")
def client(audience_engine):
    app = create_app(audience_engine, Tenants.from_config(TENANTS))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def post(client: TestClient, body, key: str | None = SHOP_KEY):
    headers = {"X-API-Key": key} if key is not None else {}
    if isinstance(body, bytes | str):
        headers["Content-Type"] = "application/json"
        return client.post("/v1/audiences/estimate", content=body, headers=headers)
    return client.post("/v1/audiences/estimate", json=body, headers=headers)


def test_estimate_answers_a_tenants_query_over_its_own_app(client):
    response = post(client, {"difference": [leaf("install"), leaf("purchase")]})
    assert response.status_code == 200
    body = response.json()
    assert body["estimate"] == body["lower_95"] == body["upper_95"] == 70
    assert body["exact"] is True
    assert body["rows_read"] == 4
    assert body["elapsed_ms"] >= 0 and body["warnings"] == []


def test_each_tenant_reads_its_own_apps(client):
    response = post(client, leaf("install", app="com.rival", date_to="2026-11-01"), RIVAL_KEY)
    assert response.status_code == 200 and response.json()["estimate"] == 10


@pytest.mark.parametrize(
    ("key", "message"), [(None, "missing X-API-Key header"), ("guessed-key", "unknown API key")]
)
def test_a_missing_or_unknown_api_key_is_401(client, key, message):
    response = post(client, leaf("install"), key)
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "message": message, "path": None}
    assert response.headers["WWW-Authenticate"] == "ApiKey"


def test_a_query_naming_another_tenants_app_is_403_naming_the_app(client):
    response = post(client, {"union": [leaf("install"), leaf("install", app="com.rival")]})
    assert response.status_code == 403
    assert response.json() == {
        "error": "forbidden_app",
        "message": "this API key may not query app 'com.rival'",
        "path": "$.union[1].app_id",
    }


def test_an_invalid_query_is_400_naming_the_json_path(client):
    response = post(client, {"difference": [leaf("install"), leaf("purchase", min_count=0)]})
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid_query",
        "message": "must be a positive integer",
        "path": "$.difference[1].min_count",
    }


def test_a_leaf_with_an_empty_attribute_name_is_400_not_500(client):
    response = post(client, leaf("purchase", attributes={"": "red"}))
    assert response.status_code == 400
    assert response.json()["path"] == '$.attributes[""]'


@pytest.mark.parametrize(
    ("query", "path", "problem"),
    [
        (
            leaf("install", date_to="2026-11-03"),
            "$",
            "no sketches for com.shop/install on 2026-11-03",
        ),
        (
            leaf("purchase", attributes={"order_id": "o-1"}),
            "$.attributes.order_id",
            "attribute 'order_id' of com.shop/purchase cannot be filtered on: never seen",
        ),
    ],
    ids=["unbuilt-day", "trimmed-attribute"],
)
def test_a_query_the_sketches_cannot_answer_is_422_with_the_reason(client, query, path, problem):
    response = post(client, query)
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "unanswerable_query" and body["path"] == path
    assert body["message"].startswith(problem)


def _nested_tree(depth: int) -> dict:
    tree = leaf("install")
    for _ in range(depth):
        tree = {"union": [tree, leaf("purchase")]}
    return tree


GARBAGE = {
    "not-json": b"estimate please",
    "empty": b"",
    "truncated": b'{"app_id": "com.shop", ',
    "json-array": b"[1, 2, 3]",
    "json-string": b'"install"',
    "json-null": b"null",
    "json-number": b"42",
    "nan": b'{"app_id": "com.shop", "min_count": NaN}',
    "invalid-utf8": b'{"app_id": "\xff\xfe"}',
    "lone-surrogate": json.dumps(leaf("\ud800")).encode(),
    "surrogate-attribute-name": json.dumps(leaf("purchase", attributes={"\udc00": "x"})).encode(),
    "deep-json-arrays": b"[" * 30_000 + b"]" * 30_000,
    "deep-json-objects": b'{"union": [' * 3_000 + b"]}" * 3_000,
    "deep-query-tree": json.dumps(_nested_tree(40)).encode(),
    "oversized-body": json.dumps(leaf("x" * (MAX_BODY_BYTES + 1))).encode(),
    "huge-integer-literal": b'{"min_count": ' + b"9" * 5_000 + b"}",
    "huge-min-count": json.dumps(leaf("purchase", min_count=10**400)).encode(),
    "float-min-count": b'{"app_id": "com.shop", "event_type": "install", "date_from": '
    b'"2026-11-01", "date_to": "2026-11-02", "min_count": 1e999}',
    "last-representable-day": json.dumps(
        leaf("install", date_from="9999-12-31", date_to="9999-12-31")
    ).encode(),
    "year-zero": json.dumps(leaf("install", date_from="0000-01-01")).encode(),
    "range-too-long": json.dumps(leaf("install", date_from="2020-01-01")).encode(),
    "too-many-leaves": json.dumps({"union": [leaf("install")] * 40}).encode(),
    "wrong-type-app-id": json.dumps(leaf("install", app=123)).encode(),
    "wrong-type-date": json.dumps(leaf("install", date_from=20261101)).encode(),
    "wrong-type-min-count": json.dumps(leaf("install", min_count="3")).encode(),
    "bool-min-count": json.dumps(leaf("install", min_count=True)).encode(),
    "attributes-list": json.dumps(leaf("purchase", attributes=["color", "red"])).encode(),
    "attribute-value-number": json.dumps(leaf("purchase", attributes={"color": 7})).encode(),
    "operator-not-a-list": json.dumps({"union": leaf("install")}).encode(),
    "operator-one-child": json.dumps({"intersection": [leaf("install")]}).encode(),
    "operator-with-extra-key": json.dumps({"union": [leaf("a"), leaf("b")], "x": 1}).encode(),
    "unknown-operator": json.dumps({"xor": [leaf("install"), leaf("purchase")]}).encode(),
    "unknown-leaf-field": json.dumps(leaf("install", segment="vip")).encode(),
    "empty-object": b"{}",
    "filter-syntax-in-attribute": json.dumps(
        leaf("purchase", attributes={"color') OR (true": "red'"})
    ).encode(),
    "separator-in-event": json.dumps(leaf("install|%00")).encode(),
    "long-event-name": json.dumps(leaf("e" * 60_000)).encode(),
}


@pytest.mark.parametrize("body", GARBAGE.values(), ids=GARBAGE.keys())
def test_garbage_bodies_are_client_errors_with_a_reason(client, body):
    response = post(client, body)
    assert 400 <= response.status_code < 500, response.text
    error = response.json()
    refusal = set()
    if response.status_code == 422:
        refusal = {"causes", "answerable_range", "answerable_shift_days"}
    assert set(error) == {"error", "message", "path", *refusal} and error["message"]


def test_a_wrong_method_gets_the_error_shape(client):
    response = client.get("/v1/audiences/estimate", headers={"X-API-Key": SHOP_KEY})
    assert response.status_code == 405
    assert response.json()["error"] == "method_not_allowed"


def test_health_is_ok_when_the_sketch_table_answers(client):
    response = client.get("/v1/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_health_is_503_naming_a_missing_sketch_table(gateway_settings):
    settings = gateway_settings.with_overrides(table_prefix="unbuilt")
    with hbase_pool(settings) as pool:
        app = create_app(AudienceEngine(sketch_table_opener(pool)), Tenants.from_config(TENANTS))
        with TestClient(app) as test_client:
            response = test_client.get("/v1/health")
    assert response.status_code == 503
    assert response.json()["detail"] == (
        "sketch table unreadable: TableNotFoundException: unbuilt_sketches"
    )


@pytest.fixture(scope="module")
def client_of_stopped_hbase(preloaded_gateway, fill_sketch_table):
    """An app whose HBase gateway has stopped after the app was created."""
    with preloaded_gateway("stopped-hbase", fill_sketch_table) as gateway:
        settings = HBaseSettings(host=gateway.host, port=gateway.port, timeout_ms=5000)
        with hbase_pool(settings) as pool:
            app = create_app(
                AudienceEngine(sketch_table_opener(pool)), Tenants.from_config(TENANTS)
            )
            gateway.stop()
            with TestClient(app, raise_server_exceptions=False) as test_client:
                yield test_client


def test_health_is_503_when_hbase_is_unreachable(client_of_stopped_hbase):
    response = client_of_stopped_hbase.get("/v1/health")
    assert response.status_code == 503
    assert response.json()["status"] == "unavailable"
    assert response.json()["detail"] == "HBase cannot be reached"


def test_an_estimate_is_503_when_hbase_is_unreachable(client_of_stopped_hbase):
    response = post(client_of_stopped_hbase, leaf("install"))
    assert response.status_code == 503
    assert response.json()["error"] == "hbase_unavailable"


def test_openapi_documents_the_estimate_contract(client):
    spec = client.get("/openapi.json").json()
    operation = spec["paths"]["/v1/audiences/estimate"]["post"]
    body = operation["requestBody"]["content"]["application/json"]
    assert body["schema"] == {"$ref": "#/components/schemas/AudienceQuery"}
    assert {"leaf", "funnel"} <= set(body["examples"])
    responses = operation["responses"]
    assert responses["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AudienceEstimateResponse"
    }
    for status in ("400", "401", "403", "413", "503"):
        schema = responses[status]["content"]["application/json"]["schema"]
        assert schema == {"$ref": "#/components/schemas/ErrorResponse"}
    unanswerable = responses["422"]["content"]["application/json"]["schema"]
    assert unanswerable == {"$ref": "#/components/schemas/UnanswerableResponse"}
    assert operation["security"] == [{"APIKeyHeader": []}]
    scheme = spec["components"]["securitySchemes"]["APIKeyHeader"]
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "X-API-Key"}


def test_openapi_query_schema_has_exactly_the_engines_leaf_fields(client):
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert set(schemas["LeafQuery"]["properties"]) == LEAF_FIELDS
    assert [ref["$ref"].rsplit("/", 1)[1] for ref in schemas["AudienceQuery"]["anyOf"]] == [
        "LeafQuery",
        "UnionQuery",
        "IntersectionQuery",
        "DifferenceQuery",
    ]


def test_openapi_examples_are_valid_queries(client):
    spec = client.get("/openapi.json").json()
    operation = spec["paths"]["/v1/audiences/estimate"]["post"]
    examples = operation["requestBody"]["content"]["application/json"]["examples"]
    examples = [example["value"] for example in examples.values()]
    examples += spec["components"]["schemas"]["LeafQuery"]["examples"]
    for example in examples:
        parse_query(example)


def test_tenants_file_maps_each_api_key_to_its_tenants_apps():
    tenants = Tenants.from_file(EXAMPLES / "tenants.json")
    assert tenants.names == ["pixelquest", "shopfast"]
    for key in ("pixelquest-91c2e07d5b6a4d18", "pixelquest-rotated-5e4d3c2b1a09"):
        assert tenants.authenticate(key).app_ids == {"com.pixelquest.dragons"}
    assert tenants.authenticate("shopfast-3b8f0d6c1a9e4f27").name == "shopfast"
    assert tenants.authenticate("shopfast-3b8f0d6c1a9e4f28") is None
    assert tenants.authenticate(None) is None


def test_a_tenant_granted_a_prefix_may_query_every_app_under_it():
    config = {"tenants": [{"name": "ads", "api_keys": [SHOP_KEY], "app_id_prefixes": ["td."]}]}
    tenant = Tenants.from_config(config).authenticate(SHOP_KEY)
    assert tenant.may_query("td.62") and tenant.may_query("td.161")
    assert not tenant.may_query("tdx.1") and not tenant.may_query("com.shop")


def test_an_unanswerable_query_carries_its_causes_and_the_answerable_range(client):
    response = post(client, leaf("install", date_to="2026-11-03"))
    body = response.json()
    assert body["causes"] == [
        {"leaf": "$", "reason": "not_built", "attribute": None, "days": ["2026-11-03"],
         "measured": []}
    ]  # fmt: skip
    assert body["answerable_range"] == {"date_from": "2026-11-01", "date_to": "2026-11-02"}


def test_a_refusal_of_several_criteria_gives_each_criterions_causes_with_its_leaf(client):
    up_to_3rd = {"date_to": "2026-11-03"}
    tree = {"intersection": [leaf("install", **up_to_3rd), leaf("purchase", **up_to_3rd)]}
    body = post(client, tree).json()
    unbuilt = {"reason": "not_built", "attribute": None, "days": ["2026-11-03"], "measured": []}
    assert body["causes"] == [
        {"leaf": "$.intersection[0]", **unbuilt},
        {"leaf": "$.intersection[1]", **unbuilt},
    ]
    assert body["answerable_range"] == {"date_from": "2026-11-01", "date_to": "2026-11-02"}
    assert body["answerable_shift_days"] is None


def test_the_openapi_schema_documents_the_causes_and_the_answerable_range(client):
    schema = client.get("/openapi.json").json()
    estimate = schema["paths"]["/v1/audiences/estimate"]["post"]["responses"]["422"]
    ref = estimate["content"]["application/json"]["schema"]["$ref"].split("/")[-1]
    fields = schema["components"]["schemas"][ref]["properties"]
    assert {"causes", "answerable_range", "answerable_shift_days"} <= set(fields)


def test_a_prefix_grant_still_refuses_other_apps_in_a_query():
    config = {
        "tenants": [
            {
                "name": "ads",
                "api_keys": [SHOP_KEY],
                "app_ids": ["com.a"],
                "app_id_prefixes": ["td."],
            }
        ]
    }
    tenant = Tenants.from_config(config).authenticate(SHOP_KEY)
    leaf = {"event_type": "click", "date_from": "2026-11-01", "date_to": "2026-11-01"}
    query = admissible_query({"union": [{**leaf, "app_id": "td.1"}, {**leaf, "app_id": "com.b"}]})
    with pytest.raises(ForbiddenApp) as refused:
        tenant.authorize(query)
    assert (refused.value.path, refused.value.app_id) == ("$.union[1].app_id", "com.b")


def _tenant(**fields) -> dict:
    return {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"], **fields}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ([], '$: expected an object with the key "tenants"'),
        ({"tenants": [_tenant()], "admins": []}, "$.admins: unknown field"),
        ({"tenants": [_tenant()], "admin_api_keys": ["short"]}, "$.admin_api_keys[0]: too short"),
        (
            {"tenants": [_tenant()], "admin_api_keys": [SHOP_KEY]},
            "$.admin_api_keys[0]: key already belongs to tenant 'shop'",
        ),
        ({"tenants": []}, "$.tenants: expected a non-empty list of tenants"),
        ({"tenants": [_tenant(app_id="com.shop")]}, "$.tenants[0].app_id: unknown field"),
        ({"tenants": [_tenant(app_ids=[])]}, "$.tenants[0].app_ids: required, a non-empty list"),
        ({"tenants": [_tenant(api_keys=["short"])]}, "$.tenants[0].api_keys[0]: too short"),
        (
            {"tenants": [{"name": "shop", "api_keys": [SHOP_KEY]}]},
            "$.tenants[0]: needs app_ids, app_id_prefixes or both",
        ),
        (
            {"tenants": [_tenant(app_id_prefixes=["co"])]},
            "$.tenants[0].app_id_prefixes[0]: too short",
        ),
        (
            {"tenants": [_tenant(), _tenant(name="other")]},
            "$.tenants[1].api_keys[0]: key already belongs to tenant 'shop'",
        ),
        (
            {"tenants": [_tenant(), _tenant(api_keys=[RIVAL_KEY])]},
            "$.tenants[1].name: duplicate tenant name 'shop'",
        ),
    ],
    ids=[
        "not-an-object",
        "unknown-top-level-field",
        "short-admin-key",
        "admin-key-of-a-tenant",
        "no-tenants",
        "typo",
        "no-apps",
        "short-key",
        "no-grant",
        "short-prefix",
        "shared-key",
        "dup-name",
    ],
)
def test_tenant_config_errors_name_the_json_path(config, message):
    with pytest.raises(TenantConfigError) as raised:
        Tenants.from_config(config)
    assert str(raised.value).startswith(message)


def test_the_root_address_leads_to_the_docs(client):
    response = client.get("/", follow_redirects=False)
    assert response.status_code in (307, 308)
    assert response.headers["location"] == "/docs"


def test_an_estimate_is_in_whole_users_with_bounds_widened_to_whole_users():
    from profile_store.audiences.engine import AudienceEstimate

    answer = AudienceEstimate(5221.4, 5100.36, 5350.2, False, 3, 1.23456).to_dict()
    assert (answer["estimate"], answer["lower_95"], answer["upper_95"]) == (5221, 5100, 5351)
    assert answer["estimate_unrounded"] == 5221.4
    assert all(type(answer[k]) is int for k in ("estimate", "lower_95", "upper_95"))
