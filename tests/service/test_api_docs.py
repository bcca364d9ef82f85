"""The published API documentation (``/openapi.json``, shown by ``/docs``): one error shape, and
an introduction that explains what a first reader needs to read the answers."""

from __future__ import annotations

import json

ERROR_REF = {"$ref": "#/components/schemas/ErrorResponse"}


def test_every_error_response_of_every_route_is_the_services_error_body(builder_client):
    spec = builder_client.get("/openapi.json").json()
    errors = {
        (method, path, status): content["application/json"]["schema"]
        for path, item in spec["paths"].items()
        for method, operation in item.items()
        for status, response in operation["responses"].items()
        if status.startswith(("4", "5")) and (content := response.get("content"))
    }
    assert ("post", "/v1/audiences/daily", "422") in errors
    # Health answers its own status body on 503 as on 200 (a load balancer reads it).
    health = {"$ref": "#/components/schemas/HealthResponse"}
    assert errors.pop(("get", "/v1/health", "503")) == health
    schemas = spec["components"]["schemas"]
    assert {key for key, schema in errors.items() if not _is_error_body(schema, schemas)} == set()
    assert "ValidationError" not in json.dumps(spec)


def _is_error_body(schema: dict, schemas: dict) -> bool:
    """The service's error body, or one that extends it with fields of its own (the rejected
    lines of ``POST /v1/events``, the causes of an unanswerable query)."""
    if schema == ERROR_REF:
        return True
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    error = schemas["ErrorResponse"]
    extended = schemas.get(name, {})
    return all(
        extended.get("properties", {}).get(field) == definition
        for field, definition in error["properties"].items()
    ) and set(error.get("required", [])) <= set(extended.get("required", []))


def test_the_introduction_explains_relative_ranges(builder_client):
    introduction = builder_client.get("/openapi.json").json()["info"]["description"]
    assert '"last_days": N' in introduction
    assert "latest built day" in introduction
    assert "leaf_dates" in introduction


def test_the_introduction_explains_the_bounds_and_the_exact_flag(builder_client):
    introduction = builder_client.get("/openapi.json").json()["info"]["description"]
    assert "`lower_95` to `upper_95`" in introduction
    assert "`exact` is true" in introduction
