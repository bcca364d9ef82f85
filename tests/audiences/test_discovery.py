"""Discovery: what a tenant can build audiences from, read from markers and marginal rows."""

from __future__ import annotations

import pytest
from known_audience import RIVAL_KEY, SHOP_KEY

from profile_store.audiences.discovery import NotBuilt, app_catalog, event_attributes
from profile_store.audiences.sketch_table import SKETCH_TABLE


class CountingTable:
    """A happybase table that counts its round trips."""

    def __init__(self, table) -> None:
        self.table = table
        self.calls: list[str] = []

    def __getattr__(self, name):
        method = getattr(self.table, name)

        def call(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return call


@pytest.fixture
def table(builder_pool):
    with builder_pool.connection() as connection:
        yield CountingTable(connection.table(SKETCH_TABLE))


@pytest.fixture
def client(builder_client):
    return builder_client


def test_the_catalog_lists_each_event_type_with_the_days_it_has_users(table):
    catalog, latest = app_catalog(table, lambda app: True)
    assert latest.isoformat() == "2026-11-02"
    assert [app.to_dict() for app in catalog] == [
        {
            "app_id": "com.rival",
            "event_types": [
                {
                    "event_type": "install",
                    "first_day": "2026-11-01",
                    "last_day": "2026-11-01",
                    "days_built": ["2026-11-01"],
                }
            ],
        },
        {
            "app_id": "com.shop",
            "event_types": [
                {
                    "event_type": event,
                    "first_day": "2026-11-01",
                    "last_day": "2026-11-02",
                    "days_built": ["2026-11-01", "2026-11-02"],
                }
                for event in ("install", "purchase")
            ],
        },
    ]
    assert table.calls == ["scan"]


def test_attributes_come_with_their_values_and_users_of_the_day(table):
    found = event_attributes(table, "com.shop", "purchase")
    assert found.to_dict() == {
        "app_id": "com.shop",
        "event_type": "purchase",
        "day": "2026-11-02",
        "users": 10,
        "attributes": [
            {"name": "color", "values": [{"value": "red", "users": 10}], "values_total": 1}
        ],
    }
    assert table.calls == ["scan", "row", "scan"]  # markers, aggregate row, marginal range


def test_an_earlier_day_and_a_value_limit_are_honoured(table):
    found = event_attributes(table, "com.shop", "purchase", day=None, max_values=1)
    assert found.attributes[0].values_total == 1
    earlier = event_attributes(table, "com.shop", "purchase", found.day.replace(day=1))
    assert earlier.attributes[0].to_dict()["values"] == [
        {"value": "blue", "users": 10},
        {"value": "red", "users": 10},
    ]


def test_an_event_type_without_attributes_lists_none(table):
    assert event_attributes(table, "com.shop", "install").attributes == []


def test_an_unknown_event_type_is_not_built(table):
    with pytest.raises(NotBuilt, match="com.shop/refund has no built day"):
        event_attributes(table, "com.shop", "refund")


def test_the_api_lists_only_the_callers_apps(client):
    shop = client.get("/v1/discovery/apps", headers={"X-API-Key": SHOP_KEY}).json()
    rival = client.get("/v1/discovery/apps", headers={"X-API-Key": RIVAL_KEY}).json()
    assert [app["app_id"] for app in shop["apps"]] == ["com.shop"]
    assert [app["app_id"] for app in rival["apps"]] == ["com.rival"]
    assert shop["latest_built_day"] == "2026-11-02"


def test_the_api_lists_every_built_day_a_query_can_be_answered_over(client):
    shop = client.get("/v1/discovery/apps", headers={"X-API-Key": SHOP_KEY}).json()
    assert shop["built_days"] == ["2026-11-01", "2026-11-02"]


def test_the_api_refuses_another_tenants_attributes_with_403(client):
    response = client.get(
        "/v1/discovery/apps/com.rival/event-types/install/attributes",
        headers={"X-API-Key": SHOP_KEY},
    )
    assert response.status_code == 403
    assert response.json()["error"] == "forbidden_app"


def test_the_api_answers_attributes_of_a_day_and_404_for_an_unbuilt_one(client):
    path = "/v1/discovery/apps/com.shop/event-types/purchase/attributes"
    headers = {"X-API-Key": SHOP_KEY}
    day_1 = client.get(path, params={"day": "2026-11-01"}, headers=headers)
    assert day_1.status_code == 200
    assert [v["value"] for v in day_1.json()["attributes"][0]["values"]] == ["blue", "red"]
    missing = client.get(path, params={"day": "2026-10-01"}, headers=headers)
    assert missing.status_code == 404
    assert missing.json()["error"] == "not_built"


def test_the_api_needs_a_key(client):
    assert client.get("/v1/discovery/apps").status_code == 401
