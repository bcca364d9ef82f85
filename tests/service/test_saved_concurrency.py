"""Unique names and segment ids of saved audiences under concurrent saves: threads against one
real ``profiles serve``, two service processes on one HBase, and writers that stop or pause
midway (the store's compare-and-set protocol, ``saved.py``), on a real embedded gateway."""

from __future__ import annotations

import functools
import json
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from known_audience import BUILDER_TENANTS, RIVAL_KEY, SHOP_KEY

from profile_store.audiences import saved as saved_module
from profile_store.audiences.claims import OWNER, check_and_put, take
from profile_store.audiences.saved import (
    ACTIVATION,
    AUDIENCE_TABLE,
    CREATED,
    LEGACY_COLUMNS,
    NAME,
    PENDING_TIMEOUT_S,
    QUERY,
    RECORD,
    UPDATED,
    Activation,
    ConcurrentChange,
    DuplicateName,
    Pending,
    SavedAudiences,
    SegmentTaken,
    _encode,
    _row_key,
    ensure_table,
    name_claim,
)
from profile_store.hbase.pool import table_opener

SAVED = "/v1/audiences/saved"
INSTALLERS = {"app_id": "com.shop", "event_type": "install", "last_days": 2}
RIVALS = {"app_id": "com.rival", "event_type": "install", "last_days": 1}
CONCURRENT = 12


@pytest.fixture
def store(builder_pool) -> SavedAudiences:
    return SavedAudiences(table_opener(builder_pool, AUDIENCE_TABLE))


def later(store: SavedAudiences, seconds: float) -> SavedAudiences:
    """The same table seen by a writer whose clock is ``seconds`` ahead (another process, later)."""
    import time

    return SavedAudiences(store.open_table, clock=lambda: time.time() + seconds)


def all_at_once(calls) -> list:
    """Run the calls in threads released together; each result or the exception it raised."""
    barrier = threading.Barrier(len(calls))

    def run(call):
        barrier.wait()
        try:
            return call()
        except Exception as exc:  # the outcome under test
            return exc

    with ThreadPoolExecutor(max_workers=len(calls)) as executor:
        return list(executor.map(run, calls))


# --- the store, with writers that race, stop or pause ------------------------------------------


def test_of_racing_saves_of_one_name_exactly_one_wins(store):
    stores = [SavedAudiences(store.open_table) for _ in range(CONCURRENT)]
    outcomes = all_at_once([lambda s=s: s.create("shop", "Buyers", INSTALLERS) for s in stores])
    assert sum(not isinstance(o, Exception) for o in outcomes) == 1
    assert all(isinstance(o, DuplicateName) for o in outcomes if isinstance(o, Exception))
    assert [a.name for a in store.list("shop")] == ["Buyers"]


def test_of_racing_saves_of_one_segment_exactly_one_delivers_it(store):
    def save(i: int):
        return store.create("shop", f"A{i}", INSTALLERS, Activation("buyers", 7))

    outcomes = all_at_once([lambda i=i: save(i) for i in range(CONCURRENT)])
    assert sum(not isinstance(o, Exception) for o in outcomes) == 1
    assert all(isinstance(o, SegmentTaken) for o in outcomes if isinstance(o, Exception))
    assert len(store.list("shop")) == 1  # the refused saves left nothing behind
    assert [a.activation.segment for a in store.activated()] == ["buyers"]


def test_racing_renames_to_one_name_leave_one_audience_with_it(store):
    ids = [store.create("shop", f"A{i}", INSTALLERS).id for i in range(CONCURRENT)]
    outcomes = all_at_once([lambda i=i: store.update("shop", i, name="Target") for i in ids])
    assert sum(not isinstance(o, Exception) for o in outcomes) == 1
    names = sorted(a.name for a in store.list("shop"))
    assert names.count("Target") == 1 and len(names) == CONCURRENT


def test_a_name_given_up_by_a_rename_or_a_delete_can_be_taken(store):
    first = store.create("shop", "Buyers", INSTALLERS, Activation("buyers", 7))
    store.update("shop", first.id, name="Old buyers", activation=None)
    store.create("shop", "buyers", INSTALLERS, Activation("buyers", 7))  # name and segment free
    store.delete("shop", first.id)
    store.create("shop", "Old buyers", INSTALLERS)


def stop_after_claiming(store: SavedAudiences, tenant: str, key: bytes, claims, audience=None):
    """What a writer stopped (killed) after taking its claims leaves behind."""
    with store.open_table() as table:
        pending = Pending(tuple(claims), "stopped", store.clock())
        before = None if audience is None else _encode(audience)
        assert check_and_put(table, key, RECORD, before, _encode(audience, pending))
        for claim in claims:
            assert take(table, claim, key, pending.nonce, lambda *_: True)


def test_a_name_held_by_a_stopped_save_is_taken_once_the_save_is_stale(store):
    key = _row_key("shop", "0123456789ab")
    stop_after_claiming(store, "shop", key, [name_claim("shop", "Buyers")])
    with pytest.raises(DuplicateName):  # it might still finish
        store.create("shop", "Buyers", INSTALLERS)
    created = later(store, PENDING_TIMEOUT_S + 1).create("shop", "Buyers", INSTALLERS)
    assert [a.id for a in store.list("shop")] == [created.id]
    with store.open_table() as table:
        assert table.row(key) == {}  # the stopped save was cancelled: nothing of it is left


def test_a_stopped_rename_leaves_the_audience_as_it_was(store):
    audience = store.create("shop", "Buyers", INSTALLERS)
    key = _row_key("shop", audience.id)
    stop_after_claiming(store, "shop", key, [name_claim("shop", "New")], audience)
    with pytest.raises(ConcurrentChange):
        store.update("shop", audience.id, query=INSTALLERS)  # the change is under way
    assert store.get("shop", audience.id) == audience  # reads see the audience as it was
    after = later(store, PENDING_TIMEOUT_S + 1)
    after.create("shop", "New", INSTALLERS)
    assert after.get("shop", audience.id) == audience
    assert after.update("shop", audience.id, name="Renamed").name == "Renamed"


def test_a_save_paused_past_the_timeout_fails_and_takes_nothing_from_the_one_that_went_on(
    store, monkeypatch
):
    """Safety never rests on clocks: the paused save cannot complete after being cancelled."""
    paused, resume = threading.Event(), threading.Event()
    original = saved_module.take

    def take_then_pause(table, claim, owner, nonce, holds):
        taken = original(table, claim, owner, nonce, holds)
        if threading.current_thread().name == "paused":
            paused.set()
            resume.wait(60)
        return taken

    monkeypatch.setattr(saved_module, "take", take_then_pause)
    outcome: list = []
    writer = threading.Thread(
        target=lambda: outcome.append(_outcome(lambda: store.create("shop", "X", INSTALLERS))),
        name="paused",
    )
    writer.start()
    assert paused.wait(60)
    winner = later(store, PENDING_TIMEOUT_S + 1).create("shop", "X", INSTALLERS)
    resume.set()
    writer.join(60)
    assert isinstance(outcome[0], ConcurrentChange)
    assert [a.id for a in store.list("shop")] == [winner.id]
    with store.open_table() as table:
        owner = table.row(name_claim("shop", "X"))[OWNER]
    assert owner.startswith(_row_key("shop", winner.id) + b" ")


def _outcome(call):
    try:
        return call()
    except Exception as exc:
        return exc


def test_audiences_saved_before_names_were_claimed_keep_their_names(builder_pool, store):
    key = _row_key("shop", "00000000abcd")
    with builder_pool.connection() as connection:
        connection.table(AUDIENCE_TABLE).put(
            key,
            {
                NAME: b"Buyers",
                QUERY: json.dumps(INSTALLERS).encode(),
                CREATED: b"2026-11-01T00:00:00+00:00",
                UPDATED: b"2026-11-01T00:00:00+00:00",
                ACTIVATION: json.dumps({"segment": "b", "ttl_days": 7, "active": True}).encode(),
            },
        )
        ensure_table(connection)  # as the service does at start
    with pytest.raises(DuplicateName):
        store.create("shop", "buyers", INSTALLERS)
    with pytest.raises(SegmentTaken):
        store.create("rival", "Mine", RIVALS, Activation("b", 1))
    assert store.get("shop", "00000000abcd").activation == Activation("b", 7.0)
    store.update("shop", "00000000abcd", name="Buyers, renamed")
    with builder_pool.connection() as connection:
        cells = connection.table(AUDIENCE_TABLE).row(key)
    assert RECORD in cells and not set(LEGACY_COLUMNS) & set(cells)  # moved to one cell
    store.create("shop", "Buyers", INSTALLERS)  # its old name came free


def test_a_name_that_is_not_valid_unicode_is_refused(builder_client):
    response = builder_client.post(
        SAVED,
        content=b'{"name": "\\ud800", "query": ' + json.dumps(INSTALLERS).encode() + b"}",
        headers={"X-API-Key": SHOP_KEY, "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json()["path"] == "$.name"


# --- over HTTP: threads against a real service, and two service processes ----------------------


@pytest.fixture
def services(builder_pool, builder_gateway, serve_process, tmp_path):
    """Start ``count`` ``profiles serve`` processes on the builder's gateway: their URLs."""
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(BUILDER_TENANTS))

    def start(count: int) -> list[str]:
        command = [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
        command += ["--tenants", str(tenants), "--hbase-host", builder_gateway.host]
        command += ["--hbase-port", str(builder_gateway.port)]
        return [serve_process(command)[0] for _ in range(count)]

    return start


def post_all_at_once(urls: list[str], bodies: list[dict]) -> list:
    """Each body to the services in turn, all released together."""
    headers = {"X-API-Key": SHOP_KEY}
    calls = [
        functools.partial(
            httpx.post, urls[i % len(urls)] + SAVED, json=body, headers=headers, timeout=60
        )
        for i, body in enumerate(bodies)
    ]
    return all_at_once(calls)


@pytest.mark.parametrize("processes", [1, 2], ids=["one service", "two services"])
def test_concurrent_saves_of_one_name_over_http_save_it_once(services, processes):
    urls = services(processes)
    for round_ in range(3):
        body = {"name": f"Buyers {round_}", "query": INSTALLERS}
        answers = post_all_at_once(urls, [body] * CONCURRENT)
        codes = sorted(answer.status_code for answer in answers)
        assert codes == [201] + [409] * (CONCURRENT - 1), codes
        assert {a.json()["error"] for a in answers if a.status_code == 409} == {"duplicate_name"}
    listed = httpx.get(urls[0] + SAVED, headers={"X-API-Key": SHOP_KEY}, timeout=60).json()
    assert sorted(a["name"] for a in listed["audiences"]) == ["Buyers 0", "Buyers 1", "Buyers 2"]


@pytest.mark.parametrize("processes", [1, 2], ids=["one service", "two services"])
def test_concurrent_saves_of_one_segment_over_http_give_it_to_one_audience(services, processes):
    urls = services(processes)
    for round_ in range(3):
        activation = {"segment": f"seg-{round_}", "ttl_days": 7}
        bodies = [
            {"name": f"R{round_} A{i}", "query": INSTALLERS, "activation": activation}
            for i in range(CONCURRENT)
        ]
        answers = post_all_at_once(urls, bodies)
        codes = sorted(answer.status_code for answer in answers)
        assert codes == [201] + [409] * (CONCURRENT - 1), codes
    listed = httpx.get(urls[0] + SAVED, headers={"X-API-Key": SHOP_KEY}, timeout=60).json()
    segments = [a["activation"]["segment"] for a in listed["audiences"]]
    assert sorted(segments) == ["seg-0", "seg-1", "seg-2"]


def test_a_segment_held_by_another_tenant_is_refused_as_one_of_ones_own_is(services):
    (url,) = services(1)

    def save(name: str, query: dict, key: str, segment: str) -> httpx.Response:
        body = {"name": name, "query": query, "activation": {"segment": segment, "ttl_days": 7}}
        return httpx.post(url + SAVED, json=body, headers={"X-API-Key": key}, timeout=60)

    assert save("Shop secret audience", INSTALLERS, SHOP_KEY, "vip").status_code == 201
    assert save("Rival's own", RIVALS, RIVAL_KEY, "mine").status_code == 201
    held_by_another = save("Try", RIVALS, RIVAL_KEY, "vip")
    held_by_own = save("Try", RIVALS, RIVAL_KEY, "mine")
    assert held_by_another.status_code == held_by_own.status_code == 409
    assert held_by_another.json() == {
        "error": "segment_taken",
        "message": "segment id 'vip' is not available: choose another",  # names no holder
        "path": "$.activation.segment",
    }
    assert held_by_own.json()["message"] == "segment id 'mine' is not available: choose another"
