"""The profile endpoints of the HTTP service, against a real embedded gateway (conftest.py)."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from known_profiles import (
    A1,
    A2,
    A3,
    ANN_EMAIL,
    B1,
    B2,
    BROKEN,
    C1,
    LIVE_A,
    LIVE_A2,
    LIVE_B,
    MASTERS,
    write_profile_table,
)

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import sketch_table_opener
from profile_store.hbase.pool import hbase_pool, table_opener
from profile_store.hbase.settings import HBaseSettings
from profile_store.profiles.bodies import expiries, iso_utc
from profile_store.profiles.reads import MAX_IDS, ProfileReader
from profile_store.profiles.table import PROFILE_TABLE
from profile_store.service.app import create_app
from profile_store.service.routes.profiles import MAX_BATCH_BODY_BYTES
from profile_store.service.tenants import Tenants

SHOP_KEY = "shop-key-0123456789abcdef"
RIVAL_KEY = "rival-key-0123456789abcdef"
TENANTS = Tenants.from_config(
    {
        "tenants": [
            {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]},
            {"name": "rival", "api_keys": [RIVAL_KEY], "app_ids": ["com.rival"]},
        ]
    }
)
HEADERS = {"X-API-Key": SHOP_KEY}


def service(pool) -> TestClient:
    app = create_app(
        AudienceEngine(sketch_table_opener(pool)),
        TENANTS,
        ProfileReader(table_opener(pool, PROFILE_TABLE)),
    )
    return TestClient(app, raise_server_exceptions=False)


@pytest.fixture(scope="module")
def client(profile_settings):
    with hbase_pool(profile_settings) as pool, service(pool) as test_client:
        yield test_client


def get(client: TestClient, path: str, key: str | None = SHOP_KEY, **params):
    headers = {} if key is None else {"X-API-Key": key}
    return client.get(path, params=params, headers=headers)


def test_a_profile_is_200_with_live_segments_and_decayed_counters(client):
    response = get(client, f"/v1/profiles/{A2}")
    assert response.status_code == 200
    body = response.json()
    assert body["segments_expiry_ms"] == LIVE_A2 and body["segments"] == expiries(LIVE_A2)
    assert (body["master"], body["is_master"], body["devices"]) == (A1, False, 3)
    assert set(body["counters"]) == {"page_view", "purchase"}
    assert body["counters"]["purchase"] <= 2.0


@pytest.mark.parametrize("id", [A1, A3])
def test_segments_of_any_id_of_the_person_are_the_same(client, id):
    response = get(client, f"/v1/profiles/{id}/segments")
    assert response.status_code == 200
    assert response.json() == {
        "id": id,
        "key_type": None,
        "profile": id,
        "via_lookup": False,
        "segments": expiries(LIVE_A),
        "segments_expiry_ms": LIVE_A,
    }


def test_segments_of_an_alternate_id_come_through_the_lookup(client):
    response = get(client, f"/v1/profiles/{ANN_EMAIL}/segments", key_type="email_sha256")
    assert response.status_code == 200
    body = response.json()
    assert (body["profile"], body["via_lookup"], body["segments_expiry_ms"]) == (A1, True, LIVE_A)


def test_the_batch_maps_each_id_to_its_segments_and_lists_the_unknown_ids(client):
    ids = [A1, B2, "cookie-nobody"]
    response = client.post("/v1/profiles/segments", json={"ids": ids}, headers=HEADERS)
    assert response.status_code == 200
    answers = {A1: LIVE_A, B2: LIVE_B, "cookie-nobody": {}}
    assert response.json() == {
        "segments": {id: expiries(segments) for id, segments in answers.items()},
        "segments_expiry_ms": answers,
        "unknown": ["cookie-nobody"],
    }


def test_connected_is_200_for_two_non_masters_of_one_person(client):
    response = get(client, "/v1/connected", a=A2, b=A3)
    assert response.status_code == 200
    assert response.json() == {
        "a": A2,
        "b": A3,
        "connected": True,
        "master_a": A1,
        "master_b": A1,
        "edge": None,
    }


def test_connected_reports_the_edge_of_a_master_and_its_id(client):
    body = get(client, "/v1/connected", a=B2, b=B1).json()
    assert body["connected"] and body["edge"] == {"weight": 1.0, "rules": ["member_id"]}


def test_ids_of_two_persons_are_not_connected(client):
    body = get(client, "/v1/connected", a=A1, b=B1).json()
    assert not body["connected"] and (body["master_a"], body["master_b"]) == (A1, B1)


def test_linked_lists_the_other_ids_and_says_when_truncated(client):
    body = get(client, f"/v1/profiles/{C1}/linked", limit=1).json()
    assert body["devices"] == 7 and len(body["linked"]) == 1 and body["truncated"]


def test_masters_pages_through_every_master_once(client):
    first = get(client, "/v1/masters", page_size=3).json()
    second = get(client, "/v1/masters", page_size=3, after=first["next_after"]).json()
    assert first["ids"] + second["ids"] == MASTERS and second["next_after"] is None


def test_any_tenants_key_may_read_profiles(client):
    assert get(client, f"/v1/profiles/{B1}", key=RIVAL_KEY).status_code == 200


@pytest.mark.parametrize(
    ("key", "message"), [(None, "missing X-API-Key header"), ("guessed-key", "unknown API key")]
)
@pytest.mark.parametrize(
    "path", [f"/v1/profiles/{A1}", f"/v1/profiles/{A1}/segments", "/v1/masters"]
)
def test_a_missing_or_unknown_api_key_is_401(client, path, key, message):
    response = get(client, path, key=key)
    assert response.status_code == 401
    assert response.json() == {"error": "unauthorized", "message": message, "path": None}


def test_the_batch_without_an_api_key_is_401(client):
    response = client.post("/v1/profiles/segments", json={"ids": [A1]})
    assert response.status_code == 401


@pytest.mark.parametrize(
    "path",
    [
        "/v1/profiles/cookie-nobody",
        "/v1/profiles/cookie-nobody/segments",
        "/v1/profiles/cookie-nobody/linked",
    ],
)
def test_an_unknown_id_is_404(client, path):
    response = get(client, path)
    assert response.status_code == 404
    assert response.json() == {
        "error": "unknown_profile",
        "message": "no profile 'cookie-nobody'",
        "path": None,
    }


def test_an_unknown_route_is_404_with_the_error_body(client):
    response = get(client, f"/v1/profiles/{A1}/friends")
    assert response.status_code == 404 and response.json()["error"] == "not_found"


@pytest.mark.parametrize(
    ("path", "params", "message", "where"),
    [
        (f"/v1/profiles/{A1}/linked", {"limit": 0}, "query.limit: ", "query.limit"),
        (f"/v1/profiles/{A1}/linked", {"limit": "many"}, "query.limit: ", "query.limit"),
        ("/v1/masters", {"page_size": 0}, "query.page_size: ", "query.page_size"),
        ("/v1/masters", {"after": ""}, "query.after: ", "query.after"),
        ("/v1/connected", {"a": A1}, "query.b: ", "query.b"),
        ("/v1/connected", {"a": A1, "b": ""}, "query.b: ", "query.b"),
        (
            f"/v1/profiles/{A1}/segments",
            {"key_type": ""},
            "query.key_type: ",
            "query.key_type",
        ),
        ("/v1/profiles/" + "x" * 1100, {}, "id: must be at most 1024 bytes", "path.id"),
    ],
    ids=[
        "limit-0",
        "limit-text",
        "page-size-0",
        "empty-after",
        "missing-b",
        "empty-b",
        "empty-key-type",
        "long-id",
    ],
)
def test_bad_parameters_are_400_naming_the_parameter(client, path, params, message, where):
    response = get(client, path, **params)
    assert response.status_code == 400
    body = response.json()
    assert body["error"] == "invalid_request" and body["message"].startswith(message)
    assert body["path"] == where


def test_the_published_schema_refuses_the_empty_parameters_the_service_refuses(client):
    """The contract and the behaviour agree: an empty `a`, `b`, `after` or `key_type` is
    invalid in the OpenAPI schema, as the service answers it (400 above)."""
    spec = client.get("/openapi.json").json()
    declared = {
        (path, parameter["name"]): parameter["schema"]
        for path, operations in spec["paths"].items()
        for operation in operations.values()
        for parameter in operation.get("parameters", [])
    }

    def min_length(schema: dict) -> int | None:
        options = schema.get("anyOf", [schema])
        return next((o["minLength"] for o in options if "minLength" in o), None)

    assert min_length(declared[("/v1/connected", "a")]) == 1
    assert min_length(declared[("/v1/connected", "b")]) == 1
    assert min_length(declared[("/v1/masters", "after")]) == 1
    assert min_length(declared[("/v1/profiles/{id}/segments", "key_type")]) == 1
    body = spec["paths"]["/v1/profiles/segments"]["post"]["requestBody"]["content"]
    assert min_length(body["application/json"]["schema"]["properties"]["key_type"]) == 1


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (b"[1, 2]", "$"),
        (b'{"ids": "cookie-a1"}', "$.ids"),
        (b'{"ids": []}', "$.ids"),
        (json.dumps({"ids": [A1] * (MAX_IDS + 1)}).encode(), "$.ids"),
        (b'{"ids": ["cookie-a1", 7]}', "$.ids[1]"),
        (b'{"ids": ["cookie-a1", ""]}', "$.ids[1]"),
        (b'{"ids": ["cookie-a1"], "key_type": 3}', "$.key_type"),
        (b'{"ids": ["cookie-a1"], "keytype": "x"}', "$.keytype"),
        (b"{}", "$.ids"),
        (b'{"ids": ', "$"),
        (b"", "$"),
    ],
    ids=[
        "array",
        "ids-string",
        "no-ids",
        "too-many-ids",
        "number-id",
        "empty-id",
        "key-type-number",
        "unknown-field",
        "missing-ids",
        "truncated",
        "empty-body",
    ],
)
def test_a_bad_batch_body_is_400_naming_the_json_path(client, body, path):
    headers = {**HEADERS, "Content-Type": "application/json"}
    response = client.post("/v1/profiles/segments", content=body, headers=headers)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["path"] == path and error["error"] in {"invalid_request", "invalid_json"}


def test_an_oversized_batch_body_is_413(client):
    body = json.dumps({"ids": ["x" * 1000] * 1100}).encode()
    assert len(body) > MAX_BATCH_BODY_BYTES
    headers = {**HEADERS, "Content-Type": "application/json"}
    response = client.post("/v1/profiles/segments", content=body, headers=headers)
    assert response.status_code == 413 and response.json()["error"] == "body_too_large"


def test_a_row_that_does_not_decode_is_502_not_500(client):
    response = get(client, f"/v1/profiles/{BROKEN}/segments")
    assert response.status_code == 502
    assert response.json()["error"] == "corrupt_row" and BROKEN in response.json()["message"]


@pytest.fixture(scope="module")
def client_of_stopped_hbase(preloaded_gateway):
    """A service whose HBase gateway stopped after the service started."""
    with preloaded_gateway("stopped-profiles-hbase", write_profile_table) as gateway:
        settings = HBaseSettings(host=gateway.host, port=gateway.port, timeout_ms=5000)
        with hbase_pool(settings) as pool:
            gateway.stop()
            with service(pool) as test_client:
                yield test_client


@pytest.mark.parametrize(
    "path",
    [
        f"/v1/profiles/{A1}",
        f"/v1/profiles/{A1}/segments",
        f"/v1/profiles/{A1}/linked",
        f"/v1/connected?a={A1}&b={A2}",
        "/v1/masters",
    ],
)
def test_every_read_is_503_when_hbase_is_unreachable(client_of_stopped_hbase, path):
    response = client_of_stopped_hbase.get(path, headers=HEADERS)
    assert response.status_code == 503
    assert response.json() == {
        "error": "hbase_unavailable",
        "message": "HBase cannot be reached",
        "path": None,
    }


def test_the_batch_is_503_when_hbase_is_unreachable(client_of_stopped_hbase):
    response = client_of_stopped_hbase.post(
        "/v1/profiles/segments", json={"ids": [A1]}, headers=HEADERS
    )
    assert response.status_code == 503


def test_openapi_documents_every_profile_read_with_its_model_and_errors(client):
    spec = client.get("/openapi.json").json()
    expected = {
        ("/v1/profiles/{id}", "get"): "ProfileResponse",
        ("/v1/profiles/{id}/segments", "get"): "SegmentsResponse",
        ("/v1/profiles/segments", "post"): "SegmentsBatchResponse",
        ("/v1/connected", "get"): "ConnectionResponse",
        ("/v1/profiles/{id}/linked", "get"): "LinkedResponse",
        ("/v1/masters", "get"): "MastersResponse",
    }
    error_ref = {"$ref": "#/components/schemas/ErrorResponse"}
    for (path, method), model in expected.items():
        operation = spec["paths"][path][method]
        ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
        assert ok == {"$ref": f"#/components/schemas/{model}"}
        assert spec["components"]["schemas"][model]["examples"]
        for status in ("400", "401", "503"):
            schema = operation["responses"][status]["content"]["application/json"]["schema"]
            assert schema == error_ref
        assert operation["security"] == [{"APIKeyHeader": []}]
        assert operation["tags"] == ["profiles"]
    assert "/v1/audiences/estimate" in spec["paths"]
    batch = spec["paths"]["/v1/profiles/segments"]["post"]["requestBody"]["content"]
    assert set(batch["application/json"]["schema"]["properties"]) == {"ids", "key_type"}


def test_the_audience_only_service_has_no_profile_routes(profile_settings):
    with hbase_pool(profile_settings) as pool:
        app = create_app(AudienceEngine(sketch_table_opener(pool)), TENANTS)
        with TestClient(app) as test_client:
            response = test_client.get(f"/v1/profiles/{A1}", headers=HEADERS)
    assert response.status_code == 404 and response.json()["error"] == "not_found"


def test_an_unknown_key_type_is_400_not_an_unknown_profile(client):
    response = get(client, f"/v1/profiles/{ANN_EMAIL}/segments", key_type="hashed_email")
    assert response.status_code == 400
    body = response.json()
    assert body["path"] == "query.key_type" and "unknown key type" in body["message"]
    batch = client.post(
        "/v1/profiles/segments",
        json={"ids": [ANN_EMAIL], "key_type": "hashed_email"},
        headers=HEADERS,
    )
    assert batch.status_code == 400 and batch.json()["path"] == "$.key_type"


def test_every_time_in_a_profile_is_iso_utc_with_its_epoch_ms_beside_it(client):
    body = get(client, f"/v1/profiles/{A2}").json()
    for name in ("first_seen", "as_of", "now"):
        assert body[name] == iso_utc(body[f"{name}_ms"])
        assert body[name].endswith("Z") and body[name][10] == "T"
    assert body["segments"] == {s: iso_utc(ms) for s, ms in body["segments_expiry_ms"].items()}


def test_iso_utc_keeps_the_milliseconds():
    assert iso_utc(1_795_000_000_123) == "2026-11-18T11:06:40.123Z"
