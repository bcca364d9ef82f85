"""The service's edge (``edge``, ``header_deadline``, ``metrics``): keys before bodies, body
bounds, header deadlines, security headers and metrics; in-process where the ASGI contract is the
point, and against real ``profiles serve`` processes where the socket is."""

from __future__ import annotations

import asyncio
import json
import re
import select
import socket
import sys
import time
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from known_audience import BUILDER_TENANTS, SHOP_KEY
from starlette.middleware.base import BaseHTTPMiddleware

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.saved import AUDIENCE_TABLE, SavedAudiences
from profile_store.audiences.sketch_table import sketch_table_opener
from profile_store.hbase.pool import table_opener
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.table import PROFILE_TABLE
from profile_store.service.app import create_app
from profile_store.service.edge import route_rule
from profile_store.service.routes.erasure import ERASURE_PATH, ErasureDesk
from profile_store.service.tenants import Tenants

ADMIN_KEY = "admin-key-0123456789abcdef"
TENANTS_WITH_ADMIN = {**BUILDER_TENANTS, "admin_api_keys": [ADMIN_KEY]}
SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
}


@pytest.fixture
def app(builder_pool, tmp_path):
    """Every router of the service: estimates, profiles, the builder's, erasure."""
    return create_app(
        AudienceEngine(sketch_table_opener(builder_pool)),
        Tenants.from_config(TENANTS_WITH_ADMIN),
        ProfileReader(table_opener(builder_pool, PROFILE_TABLE)),
        SavedAudiences(table_opener(builder_pool, AUDIENCE_TABLE)),
        ErasureDesk(
            LocalLakeStorage(tmp_path / "lake"), table_opener(builder_pool, PROFILE_TABLE), ()
        ),
    )


@pytest.fixture
def client(app):
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def operations(app) -> list[tuple[str, str, dict]]:
    """(method, path template, OpenAPI operation) of every documented operation."""
    paths = app.openapi()["paths"]
    return [(m.upper(), p, op) for p, item in paths.items() for m, op in item.items()]


def concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "abc123", path)


def call_without_reading_the_body(app, method: str, path: str, headers: dict) -> tuple[int, dict]:
    """Run one request through the ASGI app whose body may not be read: (status, headers).

    The ``receive`` given to the app fails the test if it is ever called.
    """
    sent: list[dict] = []

    async def receive() -> dict:
        raise AssertionError(f"{method} {path}: the body was read")

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
    }
    asyncio.run(app(scope, receive, send))
    start = sent[0]
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}


BIG_BODY = {"Content-Type": "application/json", "Content-Length": str(300 * 1024 * 1024)}


def keyed_operations(app) -> list[tuple[str, str]]:
    return [(m, p) for m, p, op in operations(app) if op.get("security")]


def test_every_keyed_route_refuses_a_missing_or_unknown_key_before_reading_the_body(app):
    keyed = keyed_operations(app)
    assert len(keyed) >= 15
    for method, path in keyed:
        for headers in ({}, {"X-API-Key": "not-a-key-0123456789"}):
            status, answer = call_without_reading_the_body(
                app, method, concrete(path), {**BIG_BODY, **headers}
            )
            assert (method, path, status) == (method, path, 401)
            assert answer["connection"] == "close"  # the announced body is never drained


def test_a_tenants_key_on_an_admin_route_is_403_before_reading_the_body(app):
    status, _ = call_without_reading_the_body(
        app, "POST", ERASURE_PATH, {**BIG_BODY, "X-API-Key": SHOP_KEY}
    )
    assert status == 403


def test_a_body_announced_above_the_routes_bound_is_413_before_it_is_read(app):
    for method, path, op in operations(app):
        if "requestBody" not in op:
            continue
        key = ADMIN_KEY if "/admin/" in path else SHOP_KEY
        status, answer = call_without_reading_the_body(
            app, method, concrete(path), {**BIG_BODY, "X-API-Key": key}
        )
        assert (method, path, status) == (method, path, 413)
        assert answer["connection"] == "close"


def test_every_body_has_a_documented_bound_that_the_edge_enforces(app):
    from fastapi.routing import iter_route_contexts

    bounds = {
        (method, route.path): route_rule(route).max_body
        for route in iter_route_contexts(app.routes)
        for method in getattr(route, "methods", None) or ()
    }
    with_body = [(m, p, op) for m, p, op in operations(app) if "requestBody" in op]
    assert len(with_body) == 8
    for method, path, op in with_body:
        bound = bounds[(method, path)]
        assert bound > 0, (method, path)
        assert f"exceeds {bound} bytes" in op["responses"]["413"]["description"], (method, path)


def test_a_body_over_the_bound_is_413_even_when_not_announced(client):
    """Chunked: no Content-Length, so the bound is met while reading."""

    def chunks():
        for _ in range(20):
            yield b" " * 8192

    response = client.post("/v1/audiences/saved", content=chunks(), headers={"X-API-Key": SHOP_KEY})
    assert response.status_code == 413
    assert response.json()["error"] == "body_too_large"


def test_a_route_without_a_body_refuses_an_announced_one(client):
    response = client.request(
        "GET", "/v1/audiences/saved", content=b"{}", headers={"X-API-Key": SHOP_KEY}
    )
    assert response.status_code == 413
    assert response.json()["message"] == "GET /v1/audiences/saved takes no body"


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/v1/health", None),  # JSON
        ("/v1/audiences/saved", SHOP_KEY),  # JSON behind a key
        ("/v1/audiences/saved", None),  # an error
        ("/nothing/here", None),  # an unmatched route
        ("/builder/builder.js", None),  # a script
        ("/docs/assets/swagger-ui-bundle.js", None),  # the docs' script
        ("/openapi.json", None),
        ("/docs", None),
        ("/", None),  # the builder page
    ],
)
def test_every_response_carries_the_security_headers(client, path, key):
    response = client.get(path, headers={"X-API-Key": key} if key else {})
    for name, value in SECURITY_HEADERS.items():
        assert response.headers[name] == value, (path, name)
    policy = response.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy
    if path in ("/", "/docs"):
        assert policy.startswith("default-src 'self'")
    else:
        assert policy.startswith("default-src 'none'")


def test_a_script_is_served_as_javascript(client):
    response = client.get("/builder/builder.js")
    assert response.headers["content-type"].startswith("text/javascript")


def test_an_unforeseen_server_error_carries_the_headers_too(builder_pool):
    class BrokenEngine(AudienceEngine):
        def estimate(self, tree):
            raise RuntimeError("a bug")

    app = create_app(
        BrokenEngine(sketch_table_opener(builder_pool)), Tenants.from_config(BUILDER_TENANTS)
    )
    with TestClient(app, raise_server_exceptions=False) as client:
        query = {"app_id": "com.shop", "event_type": "install", "last_days": 1}
        response = client.post(
            "/v1/audiences/estimate", json=query, headers={"X-API-Key": SHOP_KEY}
        )
    assert response.status_code == 500
    assert response.headers["x-content-type-options"] == "nosniff"


def test_options_on_a_routers_route_lists_its_methods(client):
    response = client.options("/v1/audiences/saved/abc123")
    assert response.status_code == 204
    assert response.headers["allow"] == "DELETE, GET, OPTIONS, PATCH"


def test_no_response_is_streamed_again_by_a_base_http_middleware(app):
    """Starlette's ``BaseHTTPMiddleware`` (what ``@app.middleware("http")`` installs) streams
    every response again through a memory pipe: a static file of the docs page once arrived
    empty with a 200 while the machine was busy."""
    assert [m for m in app.user_middleware if m.cls is BaseHTTPMiddleware] == []


def test_options_on_an_unknown_path_is_the_usual_404(client):
    response = client.options("/v1/no-such-route")
    assert response.status_code == 404
    assert response.json()["error"] == "not_found"


# --- real processes ------------------------------------------------------------------------------


@pytest.fixture
def serve(builder_pool, builder_gateway, serve_process, tmp_path, monkeypatch):
    """Start ``profiles serve`` over the builder's gateway (admin key, a lake); extra flags and
    environment variables per call. Returns (URL, process, log path)."""
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(TENANTS_WITH_ADMIN))
    started = 0

    def start(*flags: str, **env: str) -> tuple[str, object, Path]:
        nonlocal started
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        command = [sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"]
        command += ["--tenants", str(tenants), "--lake", str(tmp_path / "lake"), *flags]
        command += ["--hbase-host", builder_gateway.host]
        command += ["--hbase-port", str(builder_gateway.port)]
        url, process = serve_process(command)
        started += 1
        return url, process, tmp_path / f"serve-{started - 1}.log"

    return start


def resident_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+) kB", status).group(1)) * 1024


def read_response(sock: socket.socket) -> bytes:
    """What the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_300_mb_without_a_key_are_refused_with_401_and_never_held(serve):
    url, process, _ = serve()
    assert httpx.get(f"{url}/v1/health", timeout=30).status_code == 200  # warm
    before = resident_bytes(process.pid)
    host, port = url.removeprefix("http://").split(":")
    sock = socket.create_connection((host, int(port)), timeout=60)
    size = 300 * 1024 * 1024
    head = (
        f"POST {ERASURE_PATH} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {size}\r\n\r\n"
    )
    sock.sendall(head.encode())
    # The answer comes without the body; were it to wait for the body, send the body now.
    ready, _, _ = select.select([sock], [], [], 30)
    if not ready:
        chunk = b"0" * (1024 * 1024)
        for _ in range(size // len(chunk)):
            sock.sendall(chunk)
    answer = read_response(sock)
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]
    assert b'"error":"unauthorized"' in answer
    sent = 0
    with pytest.raises(OSError):  # the service closed the connection: the body has nowhere to go
        chunk = b"0" * (1024 * 1024)
        while sent < size:
            sock.sendall(chunk)
            sent += len(chunk)
    sock.close()
    assert resident_bytes(process.pid) - before < 32 * 1024 * 1024
    assert httpx.get(f"{url}/v1/health", timeout=30).status_code == 200


def slow_client(host: str, port: int) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=30)
    sock.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n")
    sock.setblocking(False)
    return sock


def test_slowloris_connections_are_closed_while_a_normal_client_is_served(serve):
    url, _, log = serve(PROFILES_HTTP_HEADER_TIMEOUT_SECONDS="3")
    host, port = url.removeprefix("http://").split(":")
    slow = [slow_client(host, int(port)) for _ in range(200)]
    silent = socket.create_connection((host, int(port)), timeout=30)  # connects, sends nothing
    answers: dict[socket.socket, bytes] = {}  # what each got before it was closed
    served = []
    deadline = time.monotonic() + 120
    while len(answers) < len(slow) and time.monotonic() < deadline:
        for sock in slow:
            if sock in answers:
                continue
            try:
                readable, _, _ = select.select([sock], [], [], 0)
                if not readable:
                    sock.send(b"X")  # one more byte of a header line
                    continue
                answers[sock] = sock.recv(4096)
            except BlockingIOError:
                continue
            except OSError:  # closed while this byte was on its way
                answers[sock] = b""
        if not served:
            served.append(httpx.get(f"{url}/v1/health", timeout=30).status_code)
        time.sleep(0.5)
    for sock in slow:
        sock.close()
    assert served == [200]
    assert len(answers) == len(slow), f"{len(slow) - len(answers)} slow connections still open"
    assert all(answer.startswith(b"HTTP/1.1 408 ") for answer in answers.values() if answer)
    silent.settimeout(30)
    assert silent.recv(4096) == b""  # closed without an answer: it asked nothing
    assert httpx.get(f"{url}/v1/health", timeout=30).status_code == 200
    assert log.read_text().count("request headers not received within 3 s") == len(slow)


def test_a_bad_header_timeout_setting_stops_serve_with_exit_2(tmp_path, monkeypatch, capsys):
    from profile_store.cli.main import main

    monkeypatch.setenv("PROFILES_HTTP_HEADER_TIMEOUT_SECONDS", "-1")
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(BUILDER_TENANTS))
    assert main(["serve", "--tenants", str(tenants)]) == 2
    assert "PROFILES_HTTP_HEADER_TIMEOUT_SECONDS: expected a number > 0, got '-1'" in (
        capsys.readouterr().err
    )


def test_a_metrics_port_in_use_stops_serve_with_exit_1(tmp_path, capsys):
    from profile_store.cli.main import main

    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(BUILDER_TENANTS))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code = main(["serve", "--tenants", str(tenants), "--metrics-port", str(port)])
    assert code == 1
    assert f"error: metrics port {port}: " in capsys.readouterr().err


def scrape(log: Path) -> str:
    port = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", log.read_text()).group(1)
    return httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text


def sample(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus text ``metrics``."""
    for line in metrics.splitlines():
        parsed = re.fullmatch(r"(\w+)(?:\{(.*)\})? (\S+)", line)
        if parsed is None or parsed.group(1) != name:
            continue
        if dict(re.findall(r'(\w+)="([^"]*)"', parsed.group(2) or "")) == labels:
            return float(parsed.group(3))
    raise AssertionError(f"no sample {name} {labels}")


def test_metrics_are_scraped_from_their_own_port_without_a_key(serve):
    url, _, log = serve("--metrics-port", "0")
    estimate = f"{url}/v1/audiences/estimate"
    query = {"app_id": "com.shop", "event_type": "install", "last_days": 1}
    shop = {"X-API-Key": SHOP_KEY}
    assert httpx.post(estimate, json=query, headers=shop, timeout=30).status_code == 200
    assert httpx.post(estimate, json=query, timeout=30).status_code == 401
    big = {**shop, "Content-Type": "application/json"}
    assert httpx.post(estimate, content=b" " * 70_000, headers=big, timeout=30).status_code == 413
    assert (
        httpx.get(f"{url}/v1/audiences/saved/abc123", headers=shop, timeout=30).status_code == 404
    )
    assert httpx.get(f"{url}/metrics", timeout=30).status_code == 404  # not on the service's port
    assert httpx.request("PROPFIND", f"{url}/v1/health", timeout=30).status_code == 405

    metrics = scrape(log)
    requests = "profiles_http_requests_total"
    route = "/v1/audiences/estimate"
    assert sample(metrics, requests, method="POST", route=route, status="200") == 1
    assert sample(metrics, requests, method="POST", route=route, status="401") == 1
    assert sample(metrics, requests, method="POST", route=route, status="413") == 1
    saved_one = "/v1/audiences/saved/{audience_id}"  # the template, not the path
    assert sample(metrics, requests, method="GET", route=saved_one, status="404") == 1
    assert sample(metrics, requests, method="GET", route="unmatched", status="404") == 1
    assert sample(metrics, requests, method="other", route="/v1/health", status="405") == 1
    assert sample(metrics, "profiles_http_rejected_requests_total", reason="auth") == 1
    assert sample(metrics, "profiles_http_rejected_requests_total", reason="size") == 1
    assert sample(metrics, "profiles_http_rejected_requests_total", reason="timeout") == 0
    duration = "profiles_http_request_duration_seconds_count"
    assert sample(metrics, duration, method="POST", route=route) == 3
    assert sample(metrics, "profiles_http_requests_in_flight") == 0
    sent = len(httpx.Request("POST", estimate, json=query).content)
    assert sample(metrics, "profiles_http_request_body_bytes_total", route=route) == sent
    assert sample(metrics, "profiles_http_response_body_bytes_total", route=route) > 0
    assert sample(metrics, "profiles_http_connections") >= 0
    assert sample(metrics, "profiles_hbase_errors_total", kind="unavailable") == 0
    assert sample(metrics, "process_resident_memory_bytes") > 0


def test_hbase_failures_are_counted(serve_process, tmp_path):
    tenants = tmp_path / "tenants.json"
    tenants.write_text(json.dumps(BUILDER_TENANTS))
    with EmbeddedGateway(tmp_path / "hbase") as gateway:
        url, _ = serve_process(
            [
                *(sys.executable, "-m", "profile_store.cli", "serve", "--port", "0"),
                *("--tenants", str(tenants), "--metrics-port", "0"),
                *("--hbase-host", gateway.host, "--hbase-port", str(gateway.port)),
            ]
        )
    shop = {"X-API-Key": SHOP_KEY}
    response = httpx.get(f"{url}/v1/audiences/saved", headers=shop, timeout=30)  # HBase stopped
    assert response.status_code == 503
    metrics = scrape(tmp_path / "serve-0.log")
    assert sample(metrics, "profiles_hbase_errors_total", kind="unavailable") == 1
