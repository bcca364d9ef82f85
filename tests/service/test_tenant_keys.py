"""Tenants' API keys from the service's environment or from files (mounted secrets), a plain key
still accepted; a reference that gives no key stops the start naming the tenant and the field,
and no key is ever written to a message or a log."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from known_audience import SHOP_KEY

from profile_store.service.tenants import TenantConfigError, Tenants

REPO = Path(__file__).resolve().parents[2]
ENV_KEY = "shop-from-env-7f3a9c1e5b2d4086"
FILE_KEY = "shop-from-file-1c8e4a2f6d0b9375"
ADMIN_KEY = "admin-from-env-2b6d0f4a8c1e3597"


def one_tenant(*api_keys: object) -> dict:
    return {"tenants": [{"name": "shop", "api_keys": list(api_keys), "app_ids": ["com.shop"]}]}


def test_a_key_comes_from_the_environment_variable_named_by_key_env():
    tenants = Tenants.from_config(one_tenant({"key_env": "SHOP_KEY"}), {"SHOP_KEY": ENV_KEY})
    assert tenants.authenticate(ENV_KEY).name == "shop"
    assert tenants.authenticate("SHOP_KEY") is None


def test_a_key_comes_from_the_file_named_by_key_file_without_its_trailing_newline(tmp_path):
    (tmp_path / "shop.key").write_text(FILE_KEY + "\n")
    tenants = Tenants.from_config(one_tenant({"key_file": str(tmp_path / "shop.key")}), {})
    assert tenants.authenticate(FILE_KEY).name == "shop"


def test_a_relative_key_file_is_read_from_the_tenants_files_directory(tmp_path, monkeypatch):
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "shop.key").write_text(FILE_KEY)
    (tmp_path / "tenants.json").write_text(json.dumps(one_tenant({"key_file": "secrets/shop.key"})))
    monkeypatch.chdir(REPO)
    assert Tenants.from_file(tmp_path / "tenants.json").authenticate(FILE_KEY).name == "shop"


def test_plain_keys_as_strings_or_key_objects_are_still_accepted():
    tenants = Tenants.from_config(one_tenant(SHOP_KEY, {"key": ENV_KEY}), {})
    assert tenants.authenticate(SHOP_KEY).name == tenants.authenticate(ENV_KEY).name == "shop"


def test_the_example_tenants_file_still_loads():
    assert Tenants.from_file(REPO / "examples" / "tenants.json").names == ["pixelquest", "shopfast"]


def test_admin_keys_come_from_references_too():
    config = {**one_tenant(SHOP_KEY), "admin_api_keys": [{"key_env": "OPS_KEY"}]}
    tenants = Tenants.from_config(config, {"OPS_KEY": ADMIN_KEY})
    assert tenants.is_admin(ADMIN_KEY)
    assert not tenants.is_admin(SHOP_KEY)


@pytest.mark.parametrize(
    ("api_key", "environ", "message"),
    [
        (
            {"key_env": "SHOP_KEY"},
            {},
            "$.tenants[0].api_keys[0].key_env: tenant 'shop': "
            "environment variable SHOP_KEY is not set",
        ),
        (
            {"key_env": "SHOP_KEY"},
            {"SHOP_KEY": ""},
            "$.tenants[0].api_keys[0].key_env: tenant 'shop': the key is empty",
        ),
        (
            {"key_env": "SHOP_KEY"},
            {"SHOP_KEY": "short-secret"},
            "$.tenants[0].api_keys[0].key_env: tenant 'shop': too short, keys have at least 16 "
            "characters",
        ),
        (
            {"key_file": "/nonexistent/shop.key"},
            {},
            "$.tenants[0].api_keys[0].key_file: tenant 'shop': cannot read "
            "/nonexistent/shop.key: No such file or directory",
        ),
        (
            {"key_env": ""},
            {},
            "$.tenants[0].api_keys[0].key_env: tenant 'shop': expected a non-empty string",
        ),
        (
            {"key_env": "A", "key_file": "b"},
            {},
            "$.tenants[0].api_keys[0]: tenant 'shop': expected a key, or an object with one of "
            "key, key_env, key_file",
        ),
        (
            {"env": "SHOP_KEY"},
            {},
            "$.tenants[0].api_keys[0]: tenant 'shop': expected a key, or an object with one of "
            "key, key_env, key_file",
        ),
    ],
    ids=["unset", "empty", "short", "missing-file", "no-name", "two-sources", "unknown-source"],
)
def test_a_reference_without_a_usable_key_names_the_tenant_and_the_field(api_key, environ, message):
    with pytest.raises(TenantConfigError) as refused:
        Tenants.from_config(one_tenant(api_key), environ)
    assert str(refused.value) == message


def test_an_empty_key_file_is_refused(tmp_path):
    (tmp_path / "shop.key").write_text("\n")
    with pytest.raises(TenantConfigError) as refused:
        Tenants.from_config(one_tenant({"key_file": str(tmp_path / "shop.key")}), {})
    assert (
        str(refused.value) == "$.tenants[0].api_keys[0].key_file: tenant 'shop': the key is empty"
    )


def test_an_unset_admin_key_variable_names_the_admin_keys():
    config = {**one_tenant(SHOP_KEY), "admin_api_keys": [{"key_env": "OPS_KEY"}]}
    with pytest.raises(TenantConfigError) as refused:
        Tenants.from_config(config, {})
    assert str(refused.value) == (
        "$.admin_api_keys[0].key_env: admin keys: environment variable OPS_KEY is not set"
    )


def test_a_key_shared_by_two_tenants_through_references_is_refused_without_the_key():
    config = {
        "tenants": [
            {"name": "shop", "api_keys": [{"key_env": "A"}], "app_ids": ["com.shop"]},
            {"name": "rival", "api_keys": [{"key_env": "B"}], "app_ids": ["com.rival"]},
        ]
    }
    with pytest.raises(TenantConfigError) as refused:
        Tenants.from_config(config, {"A": ENV_KEY, "B": ENV_KEY})
    assert str(refused.value) == "$.tenants[1].api_keys[0]: key already belongs to tenant 'shop'"


def test_serve_refuses_an_unset_key_variable_at_start_with_exit_2(tmp_path):
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(one_tenant({"key_env": "PROFILES_TEST_UNSET_KEY"})))
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "serve", "--tenants", str(tenants)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        f"error: tenants: {tenants}: $.tenants[0].api_keys[0].key_env: tenant 'shop': "
        "environment variable PROFILES_TEST_UNSET_KEY is not set\n"
    )


def test_keys_from_the_environment_and_files_never_appear_in_the_services_log(
    serve_process, builder_gateway, tmp_path, monkeypatch
):
    (tmp_path / "shop.key").write_text(FILE_KEY + "\n")
    monkeypatch.setenv("PROFILES_TEST_SHOP_KEY", ENV_KEY)
    monkeypatch.setenv("PROFILES_TEST_OPS_KEY", ADMIN_KEY)
    tenants = tmp_path / "tenants.json"
    tenants.write_text(
        json.dumps(
            {
                **one_tenant({"key_env": "PROFILES_TEST_SHOP_KEY"}, {"key_file": "shop.key"}),
                "admin_api_keys": [{"key_env": "PROFILES_TEST_OPS_KEY"}],
            }
        )
    )
    url, process = serve_process(
        [
            *(sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"),
            *("--tenants", str(tenants), "--log-level", "debug", "--lake", str(tmp_path / "lake")),
            *("--hbase-host", builder_gateway.host, "--hbase-port", str(builder_gateway.port)),
        ]
    )
    wrong_key = "wrong-key-5a1d7e3c9b0f2468"
    saved, erasure = f"{url}/v1/audiences/saved", f"{url}/v1/admin/erasure-requests/no-such-id"
    calls = {
        "env key": (saved, ENV_KEY),
        "file key": (saved, FILE_KEY),
        "wrong key": (saved, wrong_key),
        "admin key": (erasure, ADMIN_KEY),
        "tenant key on an admin route": (erasure, FILE_KEY),
        "wrong admin key": (erasure, wrong_key),
    }
    answers = {
        name: httpx.get(address, headers={"X-API-Key": key}, timeout=30).status_code
        for name, (address, key) in calls.items()
    }
    assert answers == {
        "env key": 200,
        "file key": 200,
        "wrong key": 401,
        "admin key": 404,
        "tenant key on an admin route": 403,
        "wrong admin key": 401,
    }
    process.terminate()
    process.wait(timeout=60)
    log = (tmp_path / "serve-0.log").read_text()
    assert "GET /v1/audiences/saved" in log  # the requests were logged
    for key in (ENV_KEY, FILE_KEY, ADMIN_KEY, wrong_key):
        assert key not in log
