"""Running the gateway: CLI, start-up log, graceful shutdown, restarts, pooled idle clients."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import happybase
import pytest

from profile_store.cli import hbase_gateway as gateway_cli
from profile_store.cli.main import build_parser
from profile_store.hbase_gateway.process import EmbeddedGateway, GatewayStartError
from profile_store.hbase_gateway.server import GatewayServer
from profile_store.hbase_gateway.store import Store
from profile_store.launchers.child_processes import wait_for_exit


def test_profiles_cli_registers_the_hbase_gateway_command(tmp_path: Path) -> None:
    args = build_parser().parse_args(
        [
            "hbase-gateway",
            "--data-dir",
            str(tmp_path),
            "--host",
            "0.0.0.0",
            "--port",
            "9191",
            "--transport",
            "framed",
            "--protocol",
            "compact",
        ]
    )
    assert args.func is gateway_cli.run
    assert (args.data_dir, args.host, args.port) == (tmp_path, "0.0.0.0", 9191)
    assert (args.transport, args.protocol) == ("framed", "compact")


def test_cli_rejects_an_unknown_transport(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(
            ["hbase-gateway", "--data-dir", str(tmp_path), "--transport", "x"]
        )


def test_start_logs_one_line_with_the_address(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path) as gateway:
        log = (tmp_path / "gateway.log").read_text()
    lines = [line for line in log.splitlines() if "listening on" in line]
    assert len(lines) == 1
    assert f"127.0.0.1:{gateway.port}" in lines[0]


def test_a_serving_gateway_has_not_loaded_arrow(gateway: EmbeddedGateway) -> None:
    # Every run of the pipeline starts one; Arrow is a bulk load's, which runs in its caller.
    maps = Path(f"/proc/{gateway.pid}/maps").read_text()
    assert "libarrow" not in maps


def test_sigterm_stops_the_gateway_with_exit_code_zero(tmp_path: Path) -> None:
    gateway = EmbeddedGateway(tmp_path).start()
    assert gateway.stop() == 0
    assert not gateway.running


def test_shutdown_ends_serving_at_once_not_at_the_next_poll(tmp_path: Path) -> None:
    server = GatewayServer(Store(tmp_path), port=0)
    serving = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 600}, daemon=True
    )
    serving.start()
    client = happybase.Connection(host=server.host, port=server.port)
    try:
        assert client.tables() == []
    finally:
        client.close()
        server.shutdown()
        serving.join(30)  # a shutdown seen only at the next poll would take 600 s
        server.store.close()
    assert not serving.is_alive()


def test_waiting_for_a_process_says_whether_it_exited_in_time() -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert not wait_for_exit(sleeper, 0.2)
        sleeper.terminate()
        assert wait_for_exit(sleeper, 30)
    finally:
        sleeper.kill()
        sleeper.wait()
    assert wait_for_exit(sleeper, 0.2)  # already reaped


def test_sigterm_lets_idle_connections_go(tmp_path: Path) -> None:
    gateway = EmbeddedGateway(tmp_path).start()
    idle = happybase.Connection(**gateway.connection_kwargs())
    idle.tables()
    assert gateway.stop(timeout=20) == 0
    idle.close()


def test_data_survives_a_graceful_restart(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", {"cf": {"max_versions": 5}})
        connection.table("t").put(b"r", {b"cf:a": b"1"}, timestamp=7)
        connection.close()
    with EmbeddedGateway(tmp_path) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        assert connection.table("t").row(b"r", include_timestamp=True) == {b"cf:a": (b"1", 7)}
        assert connection.table("t").families()[b"cf"]["max_versions"] == 5
        connection.close()


def test_gateway_exits_when_its_parent_closes_stdin(tmp_path: Path) -> None:
    ready = tmp_path / "ready.json"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "profile_store.cli.hbase_gateway",
            "--data-dir",
            str(tmp_path),
            "--port",
            "0",
            "--ready-file",
            str(ready),
            "--exit-with-stdin",
        ],
        stdin=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0


def test_port_in_use_fails_start_with_the_log_in_the_error(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path / "first") as first:
        second = EmbeddedGateway(tmp_path / "second", port=first.port, startup_timeout=10)
        with pytest.raises(GatewayStartError, match="Address already in use"):
            second.start()


def test_two_gateways_share_one_data_dir(tmp_path: Path) -> None:
    """Two processes (e.g. parallel Dagster steps) may serve the same store."""
    with EmbeddedGateway(tmp_path) as one, EmbeddedGateway(tmp_path) as two:
        a = happybase.Connection(**one.connection_kwargs())
        b = happybase.Connection(**two.connection_kwargs())
        a.create_table("shared", {"cf": {}})
        b.table("shared").put(b"r", {b"cf:x": b"from-b"})
        assert a.table("shared").row(b"r") == {b"cf:x": b"from-b"}
        for _ in range(50):
            a.table("shared").counter_inc(b"c", b"cf:n")
            b.table("shared").counter_inc(b"c", b"cf:n")
        assert a.table("shared").counter_get(b"c", b"cf:n") == 100
        b.disable_table("shared")
        b.delete_table("shared")
        assert a.tables() == []
        a.close()
        b.close()


def test_idle_pooled_connection_outlives_thriftpy2_default_timeout(gateway, table_name) -> None:
    pool = happybase.ConnectionPool(2, **gateway.connection_kwargs())
    with pool.connection() as connection:
        connection.create_table(table_name, {"cf": {}})
    time.sleep(3.5)  # thriftpy2's stock server drops clients idle for 3 s
    with pool.connection() as connection:
        connection.table(table_name).put(b"r", {b"cf:a": b"1"})
        assert connection.table(table_name).row(b"r") == {b"cf:a": b"1"}
        connection.delete_table(table_name, disable=True)


def test_scan_generator_is_consumed_inside_the_pool_block(gateway, table_name) -> None:
    pool = happybase.ConnectionPool(1, **gateway.connection_kwargs())
    with pool.connection() as connection:
        connection.create_table(table_name, {"cf": {}})
        table = connection.table(table_name)
        with table.batch() as batch:
            for i in range(2500):
                batch.put(b"r%05d" % i, {b"cf:a": b"x"})
        rows = list(table.scan(batch_size=1000))
        connection.delete_table(table_name, disable=True)
    assert len(rows) == 2500
