"""``profiles audience estimate|serve`` and the HBase settings behind them, against real HBase."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from profile_store.audiences.admission import admissible_query
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.cli import audiences as cli
from profile_store.cli.conventions import settings_from_args, table_pool
from profile_store.hbase.pool import hbase_pool
from profile_store.hbase.settings import HBaseSettings
from profile_store.hbase_gateway.process import child_pids

REPO = Path(__file__).resolve().parents[2]
SHOP_KEY = "shop-key-0123456789abcdef"


def leaf(event: str, **extra) -> dict:
    return {
        "app_id": "com.shop",
        "event_type": event,
        "date_from": "2026-11-01",
        "date_to": "2026-11-02",
        **extra,
    }


FUNNEL = {"difference": [leaf("install"), leaf("purchase")]}


@pytest.fixture
def hbase_flags(gateway_settings) -> list[str]:
    return ["--hbase-host", gateway_settings.host, "--hbase-port", str(gateway_settings.port)]


def write_query(directory: Path, tree) -> str:
    path = directory / "query.json"
    path.write_text(tree if isinstance(tree, str) else json.dumps(tree))
    return str(path)


def test_estimate_prints_a_readable_answer(tmp_path, hbase_flags, capsys):
    code = cli.main(["estimate", write_query(tmp_path, FUNNEL), *hbase_flags])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[:3] == ["audience   70 users (exact)", "95% range  70 to 70", "rows read  4"]
    assert re.fullmatch(r"time       [\d.,]+ ms", out[3])


def test_estimate_json_reads_the_query_from_stdin(hbase_flags, capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(json.dumps(leaf("purchase", min_count=3))))
    code = cli.main(["estimate", "-", "--json", *hbase_flags])
    answer = json.loads(capsys.readouterr().out)
    assert code == 0
    assert answer["estimate"] == answer["lower_95"] == answer["upper_95"] == 5
    assert set(answer) == {
        "estimate",
        "lower_95",
        "upper_95",
        "estimate_unrounded",
        "exact",
        "rows_read",
        "elapsed_ms",
        "warnings",
        "leaf_dates",
    }
    assert answer["leaf_dates"] == [
        {"path": "$", "date_from": "2026-11-01", "date_to": "2026-11-02"}
    ]


def test_a_query_error_exits_2_naming_the_json_path(tmp_path, hbase_flags, capsys):
    tree = {"difference": [leaf("install"), leaf("purchase", min_count=0)]}
    code = cli.main(["estimate", write_query(tmp_path, tree), *hbase_flags])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    assert captured.err == "query error at $.difference[1].min_count: must be a positive integer\n"


def test_an_empty_attribute_name_exits_2_without_a_traceback(tmp_path, hbase_flags, capsys):
    tree = leaf("purchase", attributes={"": "red"})
    code = cli.main(["estimate", write_query(tmp_path, tree), *hbase_flags])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert err == 'query error at $.attributes[""]: an attribute name must not be empty\n'


def test_an_unanswerable_query_exits_2_naming_the_json_path(tmp_path, hbase_flags, capsys):
    tree = leaf("purchase", attributes={"order_id": "o-1"})
    code = cli.main(["estimate", write_query(tmp_path, tree), *hbase_flags])
    assert code == 2
    assert capsys.readouterr().err.startswith(
        "query error at $.attributes.order_id: attribute 'order_id' of com.shop/purchase cannot "
        "be filtered on: never seen on 2026-11-01, 2026-11-02"
    )


def test_with_json_a_refusal_carries_its_causes_and_the_answerable_range(
    tmp_path, hbase_flags, capsys
):
    tree = leaf("install", date_to="2026-11-03")
    code = cli.main(["estimate", write_query(tmp_path, tree), "--json", *hbase_flags])
    error = json.loads(capsys.readouterr().err)
    assert code == 2 and error["error"] == "unanswerable_query"
    assert [cause["reason"] for cause in error["causes"]] == ["not_built"]
    assert error["answerable_range"] == {"date_from": "2026-11-01", "date_to": "2026-11-02"}


def test_a_refusal_of_several_criteria_names_each_criterions_causes(tmp_path, hbase_flags, capsys):
    up_to_3rd = {"date_to": "2026-11-03"}
    tree = {"intersection": [leaf("install", **up_to_3rd), leaf("purchase", **up_to_3rd)]}
    code = cli.main(["estimate", write_query(tmp_path, tree), *hbase_flags])
    assert code == 2
    assert capsys.readouterr().err == (
        "query error at $.intersection[0]: no sketches for com.shop/install at "
        "$.intersection[0] on 2026-11-03: the day is not built yet (materialize "
        "audience_sketches for it); no sketches for com.shop/purchase at $.intersection[1] on "
        "2026-11-03: the day is not built yet (materialize audience_sketches for it); the "
        "sketches can answer every criterion over 2026-11-01 .. 2026-11-02\n"
    )


def test_with_json_a_refusal_of_several_criteria_is_the_http_apis_body(
    tmp_path, hbase_flags, capsys
):
    up_to_3rd = {"date_to": "2026-11-03"}
    tree = {"intersection": [leaf("install", **up_to_3rd), leaf("purchase", **up_to_3rd)]}
    code = cli.main(["estimate", write_query(tmp_path, tree), "--json", *hbase_flags])
    error = json.loads(capsys.readouterr().err)
    assert code == 2
    assert [(c.get("leaf"), c["reason"]) for c in error["causes"]] == [
        ("$.intersection[0]", "not_built"),
        ("$.intersection[1]", "not_built"),
    ]
    assert error["answerable_range"] == {"date_from": "2026-11-01", "date_to": "2026-11-02"}
    assert error["answerable_shift_days"] is None


def test_with_json_an_error_is_a_json_object_on_stderr(tmp_path, hbase_flags, capsys):
    code = cli.main(["estimate", write_query(tmp_path, {"xor": []}), "--json", *hbase_flags])
    assert code == 2
    error = json.loads(capsys.readouterr().err)
    assert error["error"] == "invalid_query" and error["path"] == "$"
    assert error["message"].startswith("unknown operator xor")


def test_an_unanswerable_query_is_named_as_the_http_api_names_it(tmp_path, hbase_flags, capsys):
    tree = leaf("purchase", attributes={"order_id": "o-1"})
    code = cli.main(["estimate", write_query(tmp_path, tree), "--json", *hbase_flags])
    assert code == 2
    error = json.loads(capsys.readouterr().err)
    assert (error["error"], error["path"]) == ("unanswerable_query", "$.attributes.order_id")


def test_a_file_that_is_not_json_exits_2(tmp_path, hbase_flags, capsys):
    path = write_query(tmp_path, "{'app_id': 'com.shop'}")
    code = cli.main(["estimate", path, *hbase_flags])
    assert code == 2
    assert capsys.readouterr().err.startswith(f"query error at $: {path}: not valid JSON")


def test_an_unreachable_hbase_exits_1(tmp_path, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    flags = ["--hbase-host", "127.0.0.1", "--hbase-port", str(closed_port)]
    code = cli.main(["estimate", write_query(tmp_path, FUNNEL), *flags])
    assert code == 1
    assert capsys.readouterr().err.startswith("error: HBase: ")


def test_without_a_host_estimate_serves_itself_from_an_embedded_gateway(
    tmp_path, fill_sketch_table, capsys, monkeypatch
):
    monkeypatch.delenv("HBASE_THRIFT_HOST", raising=False)
    data_dir = tmp_path / "hbase"
    with hbase_pool(HBaseSettings(data_dir=str(data_dir))) as pool, pool.connection() as conn:
        fill_sketch_table(conn)
    code = cli.main(["estimate", write_query(tmp_path, FUNNEL), "--hbase-data-dir", str(data_dir)])
    assert code == 0
    assert capsys.readouterr().out.startswith("audience   70 users (exact)")


def test_a_command_serves_itself_from_a_gateway_of_one_process(
    tmp_path, fill_sketch_table, monkeypatch
):
    monkeypatch.delenv("HBASE_THRIFT_HOST", raising=False)
    monkeypatch.delenv("PROFILES_HBASE_GATEWAY_WORKERS", raising=False)
    data_dir = tmp_path / "hbase"
    with hbase_pool(HBaseSettings(data_dir=str(data_dir))) as pool, pool.connection() as conn:
        fill_sketch_table(conn)
    parser = cli.configure_parser(cli.argparse.ArgumentParser())
    args = parser.parse_args(["estimate", "q.json", "--hbase-data-dir", str(data_dir)])
    with table_pool(args, SKETCH_TABLE) as pool, pool.connection() as conn:
        assert SKETCH_TABLE.encode() in conn.tables()
        gateways = [pid for pid in child_pids(os.getpid()) if serves(pid, data_dir)]
        assert len(gateways) == 1
        assert child_pids(gateways[0]) == []  # no worker, upkeep or metrics processes


def serves(pid: int, data_dir: Path) -> bool:
    """Whether process ``pid`` is a gateway over ``data_dir``."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"profile_store.cli.hbase_gateway" in argv and str(data_dir).encode() in argv


def test_hbase_pool_stops_the_embedded_gateway_it_started(tmp_path):
    with hbase_pool(HBaseSettings(data_dir=str(tmp_path))) as pool, pool.connection() as conn:
        address = (conn.host, conn.port)
        assert conn.tables() == []
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(address, timeout=5).close()


def test_hbase_settings_come_from_the_environment():
    settings = HBaseSettings.from_env(
        {
            "HBASE_THRIFT_HOST": "hbase-thrift.internal",
            "HBASE_THRIFT_PORT": "9095",
            "HBASE_THRIFT_TRANSPORT": "framed",
            "HBASE_THRIFT_PROTOCOL": "compact",
            "HBASE_TABLE_PREFIX": "prod",
            "PROFILES_HBASE_DATA_DIR": "/srv/hbase",
        }
    )
    assert settings == HBaseSettings(
        host="hbase-thrift.internal",
        port=9095,
        transport="framed",
        protocol="compact",
        table_prefix="prod",
        data_dir="/srv/hbase",
    )
    assert not settings.embedded and HBaseSettings.from_env({}).embedded


def test_hbase_flags_override_the_environment():
    parser = cli.configure_parser(cli.argparse.ArgumentParser())
    args = parser.parse_args(
        ["estimate", "q.json", "--hbase-host", "other", "--hbase-pool-size", "8"]
    )
    environ = {"HBASE_THRIFT_HOST": "hbase-thrift.internal", "HBASE_THRIFT_PORT": "9095"}
    settings = settings_from_args(args, environ)
    assert (settings.host, settings.port, settings.pool_size) == ("other", 9095, 8)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"HBASE_THRIFT_PORT": "ninety"},
            "HBASE_THRIFT_PORT: expected a whole number from 1 to 65535, got 'ninety'",
        ),
        ({"HBASE_THRIFT_TRANSPORT": "udp"}, "transport must be one of ('buffered', 'framed')"),
        ({"HBASE_THRIFT_PORT": "70000"}, "HBASE_THRIFT_PORT: expected a whole number from 1 to"),
    ],
)
def test_invalid_hbase_settings_are_refused_with_the_reason(environ, message):
    with pytest.raises(ValueError) as raised:
        HBaseSettings.from_env(environ)
    assert str(raised.value).startswith(message)


def test_the_example_query_is_admissible():
    admissible_query(json.loads((REPO / "examples" / "audience_query.json").read_text()))


def test_serve_refuses_a_bad_tenants_file_with_exit_2(tmp_path, capsys):
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps({"tenants": [{"name": "shop", "api_keys": ["k"]}]}))
    code = cli.main(["serve", "--tenants", str(tenants)])
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: tenants: {tenants}: $.tenants[0].api_keys[0]: too short, "
        "keys have at least 16 characters\n"
    )


@pytest.fixture
def served_factory(tmp_path, hbase_flags, serve_process):
    """Starts ``serve`` as a real uvicorn process on a free port: (base URL, process)."""

    def start():
        tenants = tmp_path / "tenants.json"
        shop = {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]}
        tenants.write_text(json.dumps({"tenants": [shop]}))
        command = [sys.executable, "-m", "profile_store.cli.audiences", "serve", "--port", "0"]
        return serve_process([*command, "--tenants", str(tenants), *hbase_flags])

    return start


@pytest.fixture
def served(served_factory):
    return served_factory()


def test_serve_answers_concurrent_requests_and_stops_on_sigterm(served):
    url, process = served
    expected = {
        json.dumps(FUNNEL): 70,
        json.dumps(leaf("purchase", attributes={"color": "red"})): 20,
        json.dumps(leaf("purchase", min_count=3)): 5,
    }

    def ask(body: str) -> tuple[int, float]:
        response = httpx.post(
            f"{url}/v1/audiences/estimate",
            content=body,
            headers={"X-API-Key": SHOP_KEY, "Content-Type": "application/json"},
            timeout=30,
        )
        return response.status_code, response.json()["estimate"]

    bodies = list(expected) * 8
    with ThreadPoolExecutor(max_workers=12) as executor:
        answers = list(executor.map(ask, bodies))
    assert answers == [(200, expected[body]) for body in bodies]
    assert httpx.get(f"{url}/v1/health", timeout=30).json()["status"] == "ok"
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0


def _partial_request(url: str, sent: bytes = b'{"app_id": ') -> socket.socket:
    """A POST that announces 1,000 body bytes and sends a few."""
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=20)
    head = (
        "POST /v1/audiences/estimate HTTP/1.1\r\n"
        f"Host: {host}\r\nX-API-Key: {SHOP_KEY}\r\nContent-Type: application/json\r\n"
        "Content-Length: 1000\r\n\r\n"
    )
    sock.sendall(head.encode() + sent)
    return sock


@pytest.fixture
def served_with_a_short_body_timeout(monkeypatch, served_factory):
    monkeypatch.setenv("PROFILES_HTTP_BODY_TIMEOUT_SECONDS", "1")
    return served_factory()


def test_a_body_that_does_not_arrive_in_time_is_408_and_its_connection_closed(
    served_with_a_short_body_timeout,
):
    url, _ = served_with_a_short_body_timeout
    sock = _partial_request(url)
    received = b""
    while chunk := sock.recv(4096):  # the server answers, then closes: recv ends with b""
        received += chunk
    sock.close()
    assert received.startswith(b"HTTP/1.1 408 ")
    assert b'"error":"request_timeout"' in received


def test_a_client_that_disconnects_mid_body_is_one_log_line_not_a_traceback(
    served_with_a_short_body_timeout, tmp_path
):
    url, process = served_with_a_short_body_timeout
    _partial_request(url).close()
    time.sleep(1.5)
    assert httpx.get(f"{url}/v1/health", timeout=30).status_code == 200
    log = "".join(path.read_text() for path in tmp_path.glob("serve-*.log"))
    assert "client disconnected while sending the body" in log
    assert "Traceback" not in log


def test_options_answers_204_with_the_allowed_methods(served):
    url, _ = served
    response = httpx.options(f"{url}/v1/audiences/estimate", timeout=30)
    assert response.status_code == 204
    assert response.headers["allow"] == "OPTIONS, POST"
    assert httpx.options(f"{url}/v1/nothing-here", timeout=30).status_code == 404


def test_a_bad_body_timeout_setting_stops_serve_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PROFILES_HTTP_BODY_TIMEOUT_SECONDS", "soon")
    tenants = tmp_path / "tenants.json"
    shop = {"name": "shop", "api_keys": [SHOP_KEY], "app_ids": ["com.shop"]}
    tenants.write_text(json.dumps({"tenants": [shop]}))
    assert cli.main(["serve", "--tenants", str(tenants)]) == 2
    assert "PROFILES_HTTP_BODY_TIMEOUT_SECONDS: expected a number > 0, got 'soon'" in (
        capsys.readouterr().err
    )
