"""Saved audiences per tenant, their overlaps and daily charts, over HTTP on a real gateway."""

from __future__ import annotations

import pytest
from known_audience import RIVAL_KEY, SHOP_KEY

from profile_store.audiences.saved import AUDIENCE_TABLE, SavedAudiences
from profile_store.hbase.pool import table_opener

SAVED = "/v1/audiences/saved"
SHOP = {"X-API-Key": SHOP_KEY}
RIVAL = {"X-API-Key": RIVAL_KEY}


def leaf(event: str, **extra) -> dict:
    return {"app_id": "com.shop", "event_type": event, "last_days": 2, **extra}


INSTALLERS = leaf("install")  # u0..u99: 100
PURCHASERS = leaf("purchase")  # u0..u29: 30
RED = leaf("purchase", attributes={"color": "red"})  # even u0..u18 and u20..u29: 20


@pytest.fixture
def client(builder_client):
    return builder_client


def save(client, name: str, query: dict, headers=SHOP, **extra) -> dict:
    response = client.post(SAVED, json={"name": name, "query": query, **extra}, headers=headers)
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_saved_audience_is_listed_with_its_query_and_times(client):
    created = save(client, "Buyers", PURCHASERS)
    listed = client.get(SAVED, headers=SHOP).json()["audiences"]
    assert listed == [created]
    assert created["query"] == PURCHASERS
    assert created["activation"] is None
    assert created["created"] == created["updated"]


def test_audiences_are_listed_by_name(client):
    for name in ("zeta", "Alpha", "beta"):
        save(client, name, INSTALLERS)
    names = [a["name"] for a in client.get(SAVED, headers=SHOP).json()["audiences"]]
    assert names == ["Alpha", "beta", "zeta"]


def test_another_tenant_neither_sees_nor_reads_nor_deletes_it(client):
    created = save(client, "Buyers", PURCHASERS)
    assert client.get(SAVED, headers=RIVAL).json() == {"audiences": []}
    one = f"{SAVED}/{created['id']}"
    assert client.get(one, headers=RIVAL).status_code == 404
    assert client.delete(one, headers=RIVAL).status_code == 404
    assert client.get(one, headers=SHOP).status_code == 200


def test_saving_a_query_over_another_tenants_app_is_403_naming_the_leaf(client):
    query = {"union": [INSTALLERS, {**INSTALLERS, "app_id": "com.rival"}]}
    response = client.post(SAVED, json={"name": "x", "query": query}, headers=SHOP)
    assert response.status_code == 403
    assert response.json()["path"] == "$.query.union[1].app_id"


def test_an_invalid_query_is_400_naming_its_path_inside_the_body(client):
    response = client.post(
        SAVED, json={"name": "x", "query": leaf("install", min_count=0)}, headers=SHOP
    )
    assert response.status_code == 400
    assert response.json()["path"] == "$.query.min_count"


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({"query": INSTALLERS}, "$.name", "required, a non-empty string"),
        ({"name": "  ", "query": INSTALLERS}, "$.name", "required, a non-empty string"),
        ({"name": "x"}, "$.query", "required, the audience query"),
        ({"name": "x", "query": INSTALLERS, "colour": 1}, "$.colour", "unknown field"),
        (
            {"name": "x", "query": INSTALLERS, "activation": {"segment": "a b", "ttl_days": 3}},
            "$.activation.segment",
            "required, 1-64 characters of letters, digits, _ . -",
        ),
        (
            {"name": "x", "query": INSTALLERS, "activation": {"segment": "ab\n", "ttl_days": 3}},
            "$.activation.segment",
            "required, 1-64 characters of letters, digits, _ . -",
        ),
        (
            {"name": "x", "query": INSTALLERS, "activation": {"segment": "ab", "ttl_days": 0}},
            "$.activation.ttl_days",
            "required, a number of days in (0, 3650]",
        ),
    ],
)
def test_a_bad_field_is_400_naming_it(client, body, path, message):
    response = client.post(SAVED, json=body, headers=SHOP)
    assert response.status_code == 400
    assert (response.json()["path"], response.json()["message"]) == (path, message)
    assert client.get(SAVED, headers=SHOP).json() == {"audiences": []}


def test_names_are_unique_per_tenant_ignoring_case(client):
    save(client, "Buyers", PURCHASERS)
    response = client.post(SAVED, json={"name": "buyers", "query": RED}, headers=SHOP)
    assert response.status_code == 409
    assert response.json()["error"] == "duplicate_name"
    rival_query = {**INSTALLERS, "app_id": "com.rival", "last_days": 1}
    save(client, "Buyers", rival_query, headers=RIVAL)  # another tenant may use the name


def test_rename_keeps_the_query_and_refuses_a_taken_name(client):
    first = save(client, "Buyers", PURCHASERS)
    save(client, "Red buyers", RED)
    one = f"{SAVED}/{first['id']}"
    renamed = client.patch(one, json={"name": "All buyers"}, headers=SHOP).json()
    assert (renamed["name"], renamed["query"]) == ("All buyers", PURCHASERS)
    assert renamed["created"] == first["created"]
    taken = client.patch(one, json={"name": "red buyers"}, headers=SHOP)
    assert taken.status_code == 409


def test_activation_is_set_then_deactivated_then_removed(client):
    created = save(client, "Buyers", PURCHASERS)
    one = f"{SAVED}/{created['id']}"
    on = {"segment": "buyers-2d", "ttl_days": 14, "active": True}
    assert client.patch(one, json={"activation": on}, headers=SHOP).json()["activation"] == on
    off = {**on, "active": False}
    assert client.patch(one, json={"activation": off}, headers=SHOP).json()["activation"] == off
    assert client.patch(one, json={"activation": None}, headers=SHOP).json()["activation"] is None
    assert client.get(one, headers=SHOP).json()["activation"] is None


def test_only_active_activations_are_delivered(builder_pool, client):
    on = {"segment": "buyers", "ttl_days": 7}
    save(client, "Buyers", PURCHASERS, activation=on)
    save(client, "Red", RED, activation={**on, "segment": "red", "active": False})
    save(client, "Installers", INSTALLERS)
    store = SavedAudiences(table_opener(builder_pool, AUDIENCE_TABLE))
    assert [(a.tenant, a.name) for a in store.activated()] == [("shop", "Buyers")]


def test_delete_removes_it(client):
    created = save(client, "Buyers", PURCHASERS)
    assert client.delete(f"{SAVED}/{created['id']}", headers=SHOP).status_code == 204
    assert client.get(f"{SAVED}/{created['id']}", headers=SHOP).status_code == 404
    assert client.delete(f"{SAVED}/{created['id']}", headers=SHOP).status_code == 404


def test_overlap_gives_each_audience_and_each_pairs_intersection(client):
    ids = [save(client, n, q)["id"] for n, q in (("I", INSTALLERS), ("P", PURCHASERS), ("R", RED))]
    response = client.post("/v1/audiences/overlap", json={"ids": ids}, headers=SHOP)
    assert response.status_code == 200
    body = response.json()
    assert [(a["name"], a["estimate"]) for a in body["audiences"]] == [
        ("I", 100),
        ("P", 30),
        ("R", 20),
    ]
    pairs = {(p["first"], p["second"]): p["estimate"] for p in body["pairs"]}
    assert pairs == {(ids[0], ids[1]): 30, (ids[0], ids[2]): 20, (ids[1], ids[2]): 20}
    assert all(p["lower_95"] == p["estimate"] == p["upper_95"] for p in body["pairs"])


@pytest.mark.parametrize(
    "ids", [["a"], ["a", "a"], ["a", "b", "c", "d", "e"], "ab", [1, 2]], ids=str
)
def test_overlap_needs_two_to_four_distinct_ids(client, ids):
    response = client.post("/v1/audiences/overlap", json={"ids": ids}, headers=SHOP)
    assert response.status_code == 400
    assert response.json()["path"] == "$.ids"


def test_overlap_of_an_unknown_id_is_404(client):
    created = save(client, "Buyers", PURCHASERS)
    response = client.post(
        "/v1/audiences/overlap", json={"ids": [created["id"], "0badc0ffee00"]}, headers=SHOP
    )
    assert response.status_code == 404


def test_overlap_names_the_audience_that_cannot_be_answered(client):
    good = save(client, "Buyers", PURCHASERS)
    old = save(client, "October", leaf("install", last_days=5))  # reaches before the data
    response = client.post(
        "/v1/audiences/overlap", json={"ids": [good["id"], old["id"]]}, headers=SHOP
    )
    assert response.status_code == 422
    assert response.json()["path"] == "$.ids[1]"
    assert response.json()["message"].startswith("audience 'October', at $: no sketches")


def test_the_daily_chart_applies_the_query_to_each_day(client):
    funnel = {"difference": [INSTALLERS, PURCHASERS]}
    response = client.post("/v1/audiences/daily", json=funnel, headers=SHOP)
    assert response.status_code == 200
    days = response.json()["days"]
    # Day 1: installers u0..u59 minus purchasers u0..u19; day 2: u40..u99 minus u20..u29.
    assert [(d["day"], d["estimate"]) for d in days] == [("2026-11-01", 40), ("2026-11-02", 60)]


def test_the_daily_chart_refuses_another_tenants_app(client):
    response = client.post("/v1/audiences/daily", json=INSTALLERS, headers=RIVAL)
    assert response.status_code == 403


def test_a_segment_id_delivered_by_another_audience_is_409_even_across_tenants(client):
    save(client, "Buyers", PURCHASERS, activation={"segment": "buyers", "ttl_days": 7})
    rival = {**INSTALLERS, "app_id": "com.rival", "last_days": 1}
    response = client.post(
        SAVED,
        json={"name": "Rivals", "query": rival, "activation": {"segment": "buyers", "ttl_days": 1}},
        headers=RIVAL,
    )
    assert response.status_code == 409
    assert (response.json()["error"], response.json()["path"]) == (
        "segment_taken",
        "$.activation.segment",
    )
