"""Recording erasure requests: the admin HTTP endpoints and ``profiles forget``.

On an empty lake and an empty ``profiles`` table in a real embedded gateway: what a request
records and refuses (the whole flow over a built lake is ``test_erasure.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import sketch_table_opener
from profile_store.cli.main import main
from profile_store.erasure.report import BatchFigures, ErasureReport, save_report
from profile_store.erasure.requests import REQUESTS
from profile_store.hbase.pool import hbase_pool, table_opener
from profile_store.hbase.settings import HBaseSettings
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.table import PROFILE_TABLE, ensure_table
from profile_store.service.app import create_app
from profile_store.service.routes.erasure import ERASURE_PATH, ErasureDesk
from profile_store.service.tenants import Tenants

SHOP_KEY = "shop-key-0123456789abcdef"
ADMIN_KEY = "admin-key-0123456789abcdef"
TENANTS = Tenants.from_config(
    {
        "tenants": [{"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]}],
        "admin_api_keys": [ADMIN_KEY],
    }
)
ADMIN = {"X-API-Key": ADMIN_KEY}


@pytest.fixture
def lake(tmp_path) -> LocalLakeStorage:
    return LocalLakeStorage(tmp_path / "lake")


@pytest.fixture
def client(gateway, lake) -> Iterator[TestClient]:
    settings = HBaseSettings(host=gateway.host, port=gateway.port)
    with hbase_pool(settings) as pool:
        with pool.connection() as connection:
            ensure_table(connection)
        desk = ErasureDesk(lake, table_opener(pool, PROFILE_TABLE), ("member_id", "email_sha256"))
        app = create_app(AudienceEngine(sketch_table_opener(pool)), TENANTS, erasure=desk)
        with TestClient(app, raise_server_exceptions=False) as test_client:
            yield test_client


def test_an_admin_key_records_a_request_and_gets_its_id(client, lake):
    answer = client.post(ERASURE_PATH, headers=ADMIN, json={"ids": ["cookie-1", "cookie-2"]})
    assert answer.status_code == 202
    body = answer.json()
    assert body["status"] == "pending" and body["immediate"]["found"] is False
    stored = json.loads(lake.read_bytes(f"{REQUESTS}/{body['request_id']}.json"))
    assert [given["id"] for given in stored["ids"]] == ["cookie-1", "cookie-2"]


def test_a_pending_request_reads_back_as_pending(client):
    request_id = client.post(ERASURE_PATH, headers=ADMIN, json={"ids": ["x"]}).json()["request_id"]
    answer = client.get(f"{ERASURE_PATH}/{request_id}", headers=ADMIN)
    assert answer.status_code == 200
    assert answer.json()["status"] == "pending" and answer.json()["report"] is None


def test_a_completed_request_reads_back_with_its_report(client, lake):
    request_id = client.post(ERASURE_PATH, headers=ADMIN, json={"ids": ["x"]}).json()["request_id"]
    batch = BatchFigures("eb-1", requests=1, started_at="t0", runs=1)
    report = ErasureReport(request_id, "t0", "t1", "nothing found", 1, 0, 0, batch)
    save_report(lake, report)
    answer = client.get(f"{ERASURE_PATH}/{request_id}", headers=ADMIN).json()
    assert answer["status"] == "completed" and answer["report"]["outcome"] == "nothing found"
    assert answer["report"]["batch"]["batch_id"] == "eb-1"


def test_a_tenant_key_may_not_request_an_erasure(client):
    answer = client.post(ERASURE_PATH, headers={"X-API-Key": SHOP_KEY}, json={"ids": ["x"]})
    assert (answer.status_code, answer.json()["error"]) == (403, "forbidden")


def test_a_request_without_a_key_is_unauthorized(client):
    assert client.post(ERASURE_PATH, json={"ids": ["x"]}).status_code == 401


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({"ids": []}, "$.ids", "ids: at least one id is required"),
        ({"ids": ["ok", " "]}, "$.ids", "ids[1]: must be a non-empty string"),
        ({"ids": ["x"], "key_type": "phone"}, "$.key_type", "key_type: unknown key type 'phone'"),
    ],
)
def test_a_bad_request_names_the_field(client, body, path, message):
    answer = client.post(ERASURE_PATH, headers=ADMIN, json=body)
    assert answer.status_code == 400
    assert answer.json()["path"] == path and answer.json()["message"].startswith(message)


def test_an_unknown_request_id_is_not_found(client):
    answer = client.get(f"{ERASURE_PATH}/er-20261101T000000-0123abcd", headers=ADMIN)
    assert answer.status_code == 404


def forget_command(gateway, *args: str) -> int:
    """``profiles forget ARGS`` against the test's gateway; its exit code."""
    return main(["forget", *args, "--hbase-host", gateway.host, "--hbase-port", str(gateway.port)])


def test_the_command_records_a_request(gateway, tmp_path, capsys):
    lake = tmp_path / "lake"
    code = forget_command(gateway, "cookie-9", "--lake", str(lake), "--json")
    assert code == 0
    body = json.loads(capsys.readouterr().out)
    assert (lake / REQUESTS / f"{body['request_id']}.json").exists()
    assert body["found"] is False and body["ids_suppressed"] == 1


def test_a_dry_run_of_the_command_records_nothing(gateway, tmp_path, capsys):
    lake = tmp_path / "lake"
    code = forget_command(gateway, "cookie-9", "--lake", str(lake), "--dry-run")
    assert code == 0
    printed = capsys.readouterr().out
    assert printed.startswith("dry run, nothing changed: nothing found for these ids")
    assert "would delete profile_rows: 0" in printed
    assert not (lake / REQUESTS).exists()


def test_the_command_refuses_an_unknown_key_type_in_words(gateway, tmp_path, capsys):
    code = forget_command(gateway, "x", "--key-type", "phone", "--lake", str(tmp_path))
    assert code == 2
    assert "key_type: unknown key type 'phone'" in capsys.readouterr().err
