"""Requests the identity graph does not back: refused before anything is recorded.

A lake whose identity areas hold Ann (a cookie and a GAID, one login), Bob and Cat, all three
of whom used the shared login ``guest`` (quarantined as a super-node), and a ``profiles`` table
with a row for each of their devices, in a real gateway. The command runs as a real process
where its output is the point (JSON errors, never a traceback), and the admin API in a real
``profiles serve``.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import happybase
import httpx
import pytest
from identity_areas import lake_with_keys

from profile_store.cli.main import main
from profile_store.erasure.erasure_step import ErasureTargets, begin_batch
from profile_store.erasure.requests import (
    REQUESTS,
    GivenId,
    new_request,
    pending_requests,
    save_request,
)
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.table import PROFILE_TABLE, ensure_table, profile_key
from profile_store.suppression.salted_digests import SUPPRESSION, Suppression

GAID = "38400000-8cf0-11bd-b23e-10b96e40000d"
ANN = ["ann-cookie", GAID]
OTHERS = ["bob-cookie", "cat-cookie"]
ROWS = [
    ("member_id", "m-ann", "ann-cookie"),
    ("member_id", "m-ann", GAID),
    ("member_id", "m-bob", "bob-cookie"),
    *(("member_id", "guest", device) for device in ["ann-cookie", *OTHERS]),
]
ADMIN_KEY = "admin-key-0123456789abcdef"
_prefixes = itertools.count(1)


@pytest.fixture
def prefix(gateway) -> str:
    """A table prefix of this test's own, with a ``profiles`` table holding every device."""
    name = f"refusals{next(_prefixes)}"
    connection = happybase.Connection(**gateway.connection_kwargs(), table_prefix=name)
    ensure_table(connection)
    table = connection.table(PROFILE_TABLE)
    for device in [*ANN, *OTHERS]:
        table.put(profile_key(device), {b"s:type": b"profile"})
    connection.close()
    return name


@pytest.fixture
def lake(tmp_path) -> Path:
    root = tmp_path / "lake"
    lake_with_keys(root, ROWS, quarantined=[("member_id", "guest")], id_types={GAID: "gaid"})
    return root


def hbase_flags(gateway, prefix: str) -> list[str]:
    return ["--hbase-host", gateway.host, "--hbase-port", str(gateway.port)] + [
        "--hbase-table-prefix",
        prefix,
    ]


def devices_left(gateway, prefix: str) -> set[str]:
    connection = happybase.Connection(**gateway.connection_kwargs(), table_prefix=prefix)
    table = connection.table(PROFILE_TABLE)
    left = {d for d in [*ANN, *OTHERS] if table.row(profile_key(d))}
    connection.close()
    return left


def recorded(lake: Path) -> list[str]:
    """Every request and suppression file of the lake."""
    return sorted(
        str(path.relative_to(lake))
        for folder in (REQUESTS, SUPPRESSION)
        for path in (lake / folder).glob("*")
    )


def forget_process(lake: Path, flags: list[str], *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "profile_store.cli", "forget", *args, "--lake", str(lake)]
    return subprocess.run([*command, "--json", *flags], capture_output=True, text=True, timeout=120)


def refusal(done: subprocess.CompletedProcess) -> str:
    """The message of a refusal: exit 2, one JSON error on stderr, nothing else printed."""
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" and "Traceback" not in done.stderr
    error = json.loads(done.stderr)
    assert error["error"] == "erasure_refused"
    return error["message"]


def test_forgetting_a_device_that_used_a_shared_login_takes_only_its_person(
    gateway, prefix, lake, capsys
):
    code = main(
        ["forget", "ann-cookie", "--lake", str(lake), "--json", *hbase_flags(gateway, prefix)]
    )
    assert code == 0
    body = json.loads(capsys.readouterr().out)
    assert body["profiles_resolved"] == 2 and body["keys_quarantined"] == 1
    assert devices_left(gateway, prefix) == set(OTHERS)
    suppression = Suppression.load(LocalLakeStorage(lake))
    assert suppression.covers("ann-cookie") and suppression.covers("m-ann")
    assert not suppression.covers("guest") and not suppression.covers("bob-cookie")


def test_the_request_names_what_it_removes(gateway, prefix, lake, capsys):
    main(["forget", "ann-cookie", "--lake", str(lake), "--json", *hbase_flags(gateway, prefix)])
    request_id = json.loads(capsys.readouterr().out)["request_id"]
    plan = json.loads((lake / REQUESTS / f"{request_id}.json").read_text())["plan"]
    assert plan["profiles"] == sorted(ANN)
    assert plan["keys"] == [["member_id", "m-ann"]]
    assert plan["quarantined_keys_not_followed"] == 1


def test_an_upper_case_gaid_forgets_the_lower_case_profile(gateway, prefix, lake, capsys):
    code = main(
        ["forget", GAID.upper(), "--lake", str(lake), "--json", *hbase_flags(gateway, prefix)]
    )
    assert code == 0
    assert devices_left(gateway, prefix) == set(OTHERS)
    suppression = Suppression.load(LocalLakeStorage(lake))
    assert suppression.covers(GAID) and suppression.covers(GAID.upper())


def test_a_quarantined_login_is_refused_with_exit_2_in_json_and_nothing_recorded(
    gateway, prefix, lake
):
    done = forget_process(lake, hbase_flags(gateway, prefix), "guest", "--key-type", "member_id")
    assert refusal(done) and "member_id 'guest' is quarantined" in refusal(done)
    assert recorded(lake) == []
    assert devices_left(gateway, prefix) == {*ANN, *OTHERS}


def test_a_person_beyond_the_bound_is_refused_with_exit_2_and_nothing_recorded(
    gateway, prefix, lake
):
    done = forget_process(lake, hbase_flags(gateway, prefix), "ann-cookie", "--max-profiles", "1")
    assert "resolve to 2 profiles" in refusal(done) and "bound of 1" in refusal(done)
    assert recorded(lake) == []
    assert devices_left(gateway, prefix) == {*ANN, *OTHERS}


def test_the_bound_comes_from_the_environment_and_a_bad_one_is_named(
    gateway, prefix, lake, monkeypatch, capsys
):
    monkeypatch.setenv("PROFILES_ERASURE_MAX_PROFILES", "1")
    code = main(
        ["forget", "ann-cookie", "--lake", str(lake), "--json", *hbase_flags(gateway, prefix)]
    )
    assert code == 2 and json.loads(capsys.readouterr().err)["error"] == "erasure_refused"
    monkeypatch.setenv("PROFILES_ERASURE_MAX_PROFILES", "none")
    code = main(
        ["forget", "ann-cookie", "--lake", str(lake), "--json", *hbase_flags(gateway, prefix)]
    )
    assert code == 2
    assert json.loads(capsys.readouterr().err)["message"].startswith(
        "PROFILES_ERASURE_MAX_PROFILES: expected a whole number"
    )


def test_a_request_failing_on_hbase_leaves_no_request_and_no_suppression(gateway, lake):
    # No profiles table under this prefix: the deletion fails after the request was written.
    flags = hbase_flags(gateway, "refusals_without_tables")
    done = forget_process(lake, flags, "ann-cookie")
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stderr)["error"] == "table_not_found"
    assert "Traceback" not in done.stderr
    assert recorded(lake) == []


@pytest.fixture
def served(gateway, prefix, lake, tmp_path, serve_process) -> str:
    tenants = tmp_path / "tenants.json"
    tenants.write_text(
        json.dumps(
            {
                "tenants": [
                    {"name": "shop", "api_keys": ["shop-key-0123456789abcdef"], "app_ids": ["a"]}
                ],
                "admin_api_keys": [ADMIN_KEY],
            }
        )
    )
    command = [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
    flags = ["--tenants", str(tenants), "--lake", str(lake), *hbase_flags(gateway, prefix)]
    url, _ = serve_process([*command, *flags])
    return url


def post(url: str, body: dict) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/admin/erasure-requests", json=body, headers={"X-API-Key": ADMIN_KEY}, timeout=60
    )


def test_the_admin_api_refuses_a_quarantined_login_with_422_json(served, lake, gateway, prefix):
    answer = post(served, {"ids": ["guest"], "key_type": "member_id"})
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"] == "erasure_refused" and answer.json()["path"] == "$.ids"
    assert recorded(lake) == []
    assert devices_left(gateway, prefix) == {*ANN, *OTHERS}


def test_the_admin_api_refuses_a_person_beyond_the_bound_with_422_json(served, lake):
    answer = post(served, {"ids": ["ann-cookie"], "max_profiles": 1})
    assert answer.status_code == 422
    assert answer.headers["content-type"] == "application/json"
    assert "resolve to 2 profiles" in answer.json()["message"]
    assert recorded(lake) == []


def test_the_admin_api_forgets_exactly_the_person(served, gateway, prefix):
    answer = post(served, {"ids": [GAID.upper()]})
    assert answer.status_code == 202
    assert answer.json()["immediate"]["profiles_resolved"] == 2
    assert devices_left(gateway, prefix) == set(OTHERS)


def test_an_id_that_is_not_valid_text_is_refused_as_input(served, lake):
    answer = httpx.post(
        f"{served}/v1/admin/erasure-requests",
        content=b'{"ids": ["\\ud800"]}',
        headers={"X-API-Key": ADMIN_KEY, "Content-Type": "application/json"},
        timeout=60,
    )
    assert answer.status_code == 400
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["message"].startswith("ids[0]: not valid text")
    assert recorded(lake) == []


def test_an_argument_that_is_not_utf8_exits_2_in_json(gateway, prefix, lake):
    command = [sys.executable, "-m", "profile_store.cli", "forget", b"\xff-cookie", "--json"]
    done = subprocess.run(
        [*command, "--lake", str(lake), *hbase_flags(gateway, prefix)],
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert json.loads(done.stderr)["message"].startswith("ids[0]: not valid text")
    assert b"Traceback" not in done.stderr and recorded(lake) == []


def test_a_pending_request_whose_person_grew_beyond_its_bound_is_refused_with_nothing_written(
    lake,
):
    storage = LocalLakeStorage(lake)
    request = new_request([GivenId("ann-cookie")], max_profiles=1)
    save_request(storage, request)
    files_before = sorted(p for p in Path(lake).rglob("*") if p.is_file())
    targets = ErasureTargets(connect=None, address=None, compaction=None)
    batch, refused = begin_batch(None, storage, targets, [request])
    assert batch is None  # nobody to carry out: no journal, no Spark
    assert refused[request.request_id].startswith("ids: resolve to 2 profiles")
    assert pending_requests(storage) == [request]
    assert sorted(p for p in Path(lake).rglob("*") if p.is_file()) == files_before
