"""``/healthz`` and ``/readyz`` beside ``/metrics``: the liveness and readiness of real gateway
processes, as a container's health check or an orchestrator's probe sees them."""

from __future__ import annotations

import os
import signal
import urllib.error
import urllib.request
from pathlib import Path

import happybase
import pytest
from gateway_metrics import scrape
from gateway_sockets import wait_for, worker_of

from profile_store.hbase_gateway.process import EmbeddedGateway


def probe(gateway: EmbeddedGateway, path: str) -> tuple[int, str]:
    """``(status, body)`` of ``GET path`` on the gateway's metrics listener."""
    url = f"http://{gateway.host}:{gateway.metrics_port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_serving_gateway_is_live_and_ready_beside_its_metrics(
    tmp_path: Path, workers: int
) -> None:
    with EmbeddedGateway(tmp_path, workers=workers, metrics_port=0) as gateway:
        assert probe(gateway, "/healthz") == (200, "ok\n")
        assert probe(gateway, "/readyz") == (200, "ok\n")
        assert scrape(gateway).value("hbase_gateway_workers") == workers


def test_a_worker_that_stops_coming_back_makes_the_gateway_not_live(tmp_path: Path) -> None:
    server_args = ("--liveness-timeout", "1")
    with EmbeddedGateway(tmp_path, workers=2, metrics_port=0, server_args=server_args) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        wedged = worker_of(gateway, connection)
        os.kill(wedged, signal.SIGSTOP)
        try:
            assert wait_for(lambda: probe(gateway, "/healthz")[0] == 503)
            status, why = probe(gateway, "/healthz")
            assert status == 503
            assert f"(pid {wedged}) has not come back for" in why
            assert "(bound 1 s)" in why
            assert probe(gateway, "/readyz") == (200, "ok\n")  # the other worker still serves
        finally:
            os.kill(wedged, signal.SIGCONT)
        assert wait_for(lambda: probe(gateway, "/healthz") == (200, "ok\n"))
        connection.close()


def test_a_stopping_gateway_is_not_ready_while_its_workers_finish(tmp_path: Path) -> None:
    gateway = EmbeddedGateway(tmp_path, workers=2, metrics_port=0).start()
    try:
        connection = happybase.Connection(**gateway.connection_kwargs())
        held = worker_of(gateway, connection)  # stopped, it cannot finish until continued
        os.kill(held, signal.SIGSTOP)
        try:
            os.kill(gateway.pid, signal.SIGTERM)
            assert wait_for(lambda: probe(gateway, "/readyz") == (503, "stopping\n"))
        finally:
            os.kill(held, signal.SIGCONT)
        connection.close()
    finally:
        assert gateway.stop() == 0
