"""``profiles profile ...`` and ``profiles serve`` against a real embedded gateway (conftest.py)."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import happybase
import httpx
import pytest
from known_profiles import (
    A1,
    A2,
    A3,
    ANN_EMAIL,
    B1,
    B2,
    C1,
    LIVE_A,
    LIVE_A2,
    LIVE_B,
    MASTERS,
    NOW,
    profile_with_segments,
)

from profile_store.cli import main as profiles_cli
from profile_store.cli import profiles as cli
from profile_store.profiles.bodies import expiries
from profile_store.profiles.table import ensure_table, profile_key

REPO = Path(__file__).resolve().parents[2]
SHOP_KEY = "shop-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def no_lake(tmp_path, monkeypatch) -> None:
    """No lake, as in a fresh checkout: the default one (``data/lake``, which ``make demo``
    fills) would add what its identity graph says of these ids to ``connected``'s answer."""
    monkeypatch.setenv("PROFILES_LAKE_ROOT", str(tmp_path / "no-lake"))


@pytest.fixture
def hbase_flags(profile_settings) -> list[str]:
    return ["--hbase-host", profile_settings.host, "--hbase-port", str(profile_settings.port)]


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = cli.main([*argv, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out if code == 0 else captured.err)


def test_get_prints_a_readable_profile(hbase_flags, capsys):
    code = cli.main(["get", A2, *hbase_flags])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[:3] == [f"profile     {A2} (idfa)", f"master      {A1}", "devices     3"]
    assert "unsynced    autos, travel" in out
    assert [line.split()[0] for line in out if line.startswith("  ") and "until" in line] == [
        "autos",
        "sports",
        "travel",
    ]


def test_get_json_is_the_whole_profile(hbase_flags, capsys):
    code, body = run_json(capsys, "get", A1, *hbase_flags)
    assert code == 0
    assert (body["profile"], body["is_master"], body["segments_expiry_ms"]) == (A1, True, LIVE_A)
    assert set(body) >= {"counters", "linked", "first_seen", "first_seen_ms", "devices", "now"}


def test_segments_of_one_id_is_json_with_the_answering_profile(hbase_flags, capsys):
    code, body = run_json(capsys, "segments", ANN_EMAIL, "--key-type", "email_sha256", *hbase_flags)
    assert code == 0
    assert body == {
        "id": ANN_EMAIL,
        "key_type": "email_sha256",
        "profile": A1,
        "via_lookup": True,
        "segments": expiries(LIVE_A),
        "segments_expiry_ms": LIVE_A,
    }


def test_segments_of_several_ids_is_the_batch_read(hbase_flags, capsys):
    code, body = run_json(capsys, "segments", A2, B2, "cookie-nobody", *hbase_flags)
    assert code == 0
    answers = {A2: LIVE_A2, B2: LIVE_B, "cookie-nobody": {}}
    assert body == {
        "segments": {id: expiries(segments) for id, segments in answers.items()},
        "segments_expiry_ms": answers,
        "unknown": ["cookie-nobody"],
    }


def test_segments_readable_lists_each_id_and_its_segments(hbase_flags, capsys):
    assert cli.main(["segments", B1, "cookie-nobody", *hbase_flags]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == B1 and out[1].startswith("  news  until ")
    assert out[2:] == ["cookie-nobody", "  (unknown id)"]


def test_connected_json_for_two_non_masters(hbase_flags, capsys):
    code, body = run_json(capsys, "connected", A2, A3, *hbase_flags)
    assert code == 0
    assert body == {
        "a": A2,
        "b": A3,
        "connected": True,
        "master_a": A1,
        "master_b": A1,
        "edge": None,
    }


def test_connected_readable_names_the_edge(hbase_flags, capsys):
    assert cli.main(["connected", B2, B1, *hbase_flags]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "connected   yes" and out[-1] == "edge        weight 1 (member_id)"


def test_linked_readable_says_when_truncated(hbase_flags, capsys):
    assert cli.main(["linked", C1, "--limit", "1", *hbase_flags]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{C1}: master {C1}, 7 devices, 1 of 6 listed"
    assert out[-1] == "  (truncated)"


def test_masters_json_pages_with_after(hbase_flags, capsys):
    code, first = run_json(capsys, "masters", "--page-size", "2", *hbase_flags)
    code_2, second = run_json(
        capsys, "masters", "--page-size", "2", "--after", first["next_after"], *hbase_flags
    )
    assert code == code_2 == 0
    assert first["ids"] + second["ids"] == MASTERS and second["next_after"] is None


def test_masters_readable_prints_the_next_page_flag(hbase_flags, capsys):
    assert cli.main(["masters", "--page-size", "1", *hbase_flags]) == 0
    assert capsys.readouterr().out.splitlines() == [A1, f"next page: --after {A1}"]


@pytest.mark.parametrize(
    "argv", [["get", "cookie-nobody"], ["segments", "cookie-nobody"], ["linked", "cookie-nobody"]]
)
def test_a_single_unknown_id_exits_2(hbase_flags, capsys, argv):
    code = cli.main([*argv, *hbase_flags])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err == "error: no profile 'cookie-nobody'\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["linked", A1, "--limit", "0"], "limit: must be between 1 and 1000, got 0"),
        (["masters", "--page-size", "5000"], "page_size: must be between 1 and 1000, got 5000"),
        (["segments", A1, "--key-type", ""], "key_type: must be a non-empty string"),
        (["purge", "--max-rows-per-second", "0"], "max_rows_per_second: must be a positive"),
    ],
)
def test_bad_input_exits_2_naming_the_field(hbase_flags, capsys, argv, message):
    code, error = run_json(capsys, *argv, *hbase_flags)
    assert code == 2
    assert error["error"] == "invalid_request" and error["message"].startswith(message)


def test_an_unreachable_hbase_exits_1(capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    code = cli.main(["get", A1, "--hbase-host", "127.0.0.1", "--hbase-port", str(closed_port)])
    assert code == 1
    assert capsys.readouterr().err.startswith("error: HBase: ")


def test_invalid_hbase_settings_exit_2(capsys, monkeypatch):
    monkeypatch.setenv("HBASE_THRIFT_PORT", "ninety")
    code, error = run_json(capsys, "get", A1)
    assert code == 2 and error["error"] == "invalid_settings"


def test_the_profile_command_is_registered_on_the_profiles_cli(hbase_flags, capsys):
    assert profiles_cli.main(["profile", "segments", B2, "--json", *hbase_flags]) == 0
    assert json.loads(capsys.readouterr().out)["segments_expiry_ms"] == LIVE_B


def test_purge_deletes_the_expired_cells_of_the_configured_table(profile_gateway, capsys):
    connection = happybase.Connection(**profile_gateway.connection_kwargs())
    try:
        ensure_table(connection, "purgecli_profiles")
        table = connection.table("purgecli_profiles")
        profile_with_segments(table, "p1", {"old": NOW - 1, "new": NOW + 86_400_000}, {})
        flags = ["--hbase-host", profile_gateway.host, "--hbase-port", str(profile_gateway.port)]
        code, report = run_json(capsys, "purge", "--hbase-table-prefix", "purgecli", *flags)
        assert code == 0
        assert (report["rows_scanned"], report["cells_deleted"]) == (1, 1)
        assert list(table.row(profile_key("p1"), columns=[b"g"])) == [b"g:new"]
    finally:
        connection.delete_table("purgecli_profiles", disable=True)
        connection.close()


@pytest.fixture
def served(tmp_path, hbase_flags, serve_process):
    """``profiles serve`` as a real uvicorn process on a free port; yields its base URL."""
    tenants = tmp_path / "tenants.json"
    tenants.write_text(
        json.dumps({"tenants": [{"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]}]})
    )
    command = [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
    return serve_process([*command, "--tenants", str(tenants), *hbase_flags])


def test_serve_answers_profile_and_audience_routes_and_stops_on_sigterm(served):
    url, process = served
    headers = {"X-API-Key": SHOP_KEY}
    response = httpx.get(f"{url}/v1/profiles/{A3}/segments", headers=headers, timeout=30)
    assert response.status_code == 200 and response.json()["segments_expiry_ms"] == LIVE_A
    batch = httpx.post(
        f"{url}/v1/profiles/segments", json={"ids": [A1, B1]}, headers=headers, timeout=30
    )
    assert batch.json()["segments_expiry_ms"] == {A1: LIVE_A, B1: LIVE_B}
    assert batch.json()["unknown"] == []
    paths = httpx.get(f"{url}/openapi.json", timeout=30).json()["paths"]
    assert {"/v1/audiences/estimate", "/v1/health", "/v1/profiles/{id}"} <= set(paths)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def test_the_served_docs_page_renders_every_route_in_a_browser_without_internet(
    served, headless_dom
):
    url, _ = served
    page = httpx.get(f"{url}/docs", timeout=30).text
    assert "cdn." not in page and "https://" not in page
    for asset in ("/docs/assets/swagger-ui-bundle.js", "/docs/assets/swagger-ui.css"):
        assert asset in page
        served_asset = httpx.get(f"{url}{asset}", timeout=30)
        assert served_asset.status_code == 200 and len(served_asset.content) > 10_000
    dom = headless_dom(f"{url}/docs")  # the root is the audience builder
    assert "swagger-ui" in dom and "opblock" in dom
    for route in ("/v1/audiences/estimate", "/v1/profiles/segments", "/v1/health"):
        assert route in dom


def test_an_unknown_key_type_exits_2_naming_the_known_types(hbase_flags, capsys):
    code = cli.main(["segments", ANN_EMAIL, "--key-type", "hashed_email", *hbase_flags])
    assert code == 2
    err = capsys.readouterr().err
    assert "unknown key type 'hashed_email' (known: member_id, email_sha256)" in err


def test_serve_on_an_unreachable_hbase_exits_1_naming_hbase(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    tenants = REPO / "examples" / "tenants.json"
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
        + ["--tenants", str(tenants), "--lake", str(tmp_path)]
        + ["--hbase-host", "127.0.0.1", "--hbase-port", str(closed_port)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 1
    assert completed.stderr.splitlines()[-1].startswith("error: HBase: ")


@pytest.fixture(scope="module")
def identity_lake(tmp_path_factory) -> str:
    from known_identity_lake import write_identity_lake

    return str(write_identity_lake(tmp_path_factory.mktemp("identity_lake")))


def test_connected_prints_the_chain_of_keys_from_the_lakes_identity_graph(
    hbase_flags, identity_lake, capsys, monkeypatch
):
    from known_identity_lake import D1, D2, D3, EMAIL

    monkeypatch.delenv("PROFILES_IDENTITY_CONFIG", raising=False)
    assert cli.main(["connected", D1, D3, "--lake", identity_lake, *hbase_flags]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-3] == f"chain       one person (master {D1}), linked in 2 hops"
    assert out[-2].startswith(f"  {D1} -> {D2}  member_id sha256:")
    assert out[-1] == f"  {D2} -> {D3}  email_sha256 {EMAIL}"


def test_connected_says_why_two_ids_are_not_linked(hbase_flags, identity_lake, capsys):
    from known_identity_lake import Q1, R1

    assert cli.main(["connected", Q1, R1, "--lake", identity_lake, *hbase_flags]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("why not     shared key member_id sha256:")
    assert "quarantined as a super node: 64 profiles carry it" in last


def test_connected_json_adds_the_link_to_the_http_body(hbase_flags, identity_lake, capsys):
    from known_identity_lake import U1, U2

    code, body = run_json(capsys, "connected", U1, U2, "--lake", identity_lake, *hbase_flags)
    assert code == 0
    assert body["connected"] is False
    assert body["link"]["reason"] == "no_shared_key"
    assert body["link"]["chain"] == []
