"""A schema-driven fuzz run of the HTTP API: requests generated from the service's own
``/openapi.json`` by schemathesis, bounded in examples per operation, derandomized (a fixed
seed), against the app over a real embedded gateway.

The figure it protects: no generated request, valid or not, gets a server error, and every
response is documented (status code, content type and body schema) in the published schema.
"""

from __future__ import annotations

import happybase
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import (
    negative_data_rejection,
    positive_data_acceptance,
)
from test_profile_http import SHOP_KEY, service

from profile_store.audiences.sketch_table import ensure_table as ensure_sketch_table
from profile_store.hbase_client import hbase_pool

EXAMPLES_PER_OPERATION = 150
ESTIMATE_PATH = "/v1/audiences/estimate"


@pytest.fixture(scope="module")
def api_schema(profile_settings):
    """The service over the profile data set and an (empty) sketch table."""
    connection = happybase.Connection(host=profile_settings.host, port=profile_settings.port)
    try:
        ensure_sketch_table(connection)
    finally:
        connection.close()
    with hbase_pool(profile_settings) as pool, service(pool) as client:
        yield schemathesis.openapi.from_asgi("/openapi.json", client.app)


def fuzz(operation) -> int:
    """Run the operation's generated cases; every answer is validated. Returns the calls."""
    calls = []
    # An estimate over days that hold no sketches is a documented 422, whatever the request;
    # query parameters the schema does not name are ignored, as most HTTP APIs do.
    excluded = [negative_data_rejection]
    if operation.path == ESTIMATE_PATH:
        excluded.append(positive_data_acceptance)

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
        case.call_and_validate(headers={"X-API-Key": SHOP_KEY}, excluded_checks=excluded)
        calls.append(case)

    run()
    return len(calls)


def test_no_generated_request_gets_a_server_error_or_an_undocumented_answer(api_schema):
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert len(operations) >= 6
    calls = {operation.label: fuzz(operation) for operation in operations}
    assert all(count > 0 for count in calls.values()), calls
