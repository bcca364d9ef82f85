"""A gateway of several worker processes behaves as one server to its clients.

Connections are told apart by the worker that serves them (``gateway_sockets.serving_pid``), so
the tests do not depend on luck to cross workers.
"""

from __future__ import annotations

import os
import re
import signal
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import happybase
import Hbase_thrift
import pytest
from gateway_metrics import scrape
from gateway_sockets import (
    closed_by_server,
    connections_on_two_workers,
    held_connections,
    serving_pid,
    still_open,
    wait_for,
    worker_of,
)
from Hbase_thrift import IOError as ThriftIOError
from thriftpy2.transport import TTransportException

from profile_store.cli.main import build_parser
from profile_store.hbase_gateway.process import EmbeddedGateway, child_pids, pid_alive


def test_workers_default_to_one_per_core_at_most_four(tmp_path: Path) -> None:
    base = ["hbase-gateway", "--data-dir", str(tmp_path)]
    assert build_parser().parse_args(base).workers == min(os.cpu_count() or 1, 4)
    assert build_parser().parse_args([*base, "--workers", "1"]).workers == 1
    with pytest.raises(SystemExit):
        build_parser().parse_args([*base, "--workers", "0"])


@pytest.fixture
def two_workers(tmp_path: Path) -> Iterator[EmbeddedGateway]:
    with EmbeddedGateway(tmp_path, workers=2) as gateway:
        yield gateway


def test_the_gateway_runs_the_workers_asked_for_and_an_upkeep_process(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, workers=3) as gateway:
        assert len(child_pids(gateway.pid)) == 4
        assert "workers=3" in gateway.log_path.read_text()
    with EmbeddedGateway(tmp_path, workers=1, server_args=("--compact-after-cells", "0")) as one:
        assert child_pids(one.pid) == []  # one worker: everything in the one process


def test_a_put_through_one_worker_is_read_at_once_through_another(two_workers) -> None:
    a, b = connections_on_two_workers(two_workers)
    a.create_table("t", {"cf": {"max_versions": 3}})
    for i in range(50):
        row = b"r%03d" % i
        a.table("t").put(row, {b"cf:a": b"%d" % i})
        assert b.table("t").row(row) == {b"cf:a": b"%d" % i}
        b.table("t").put(row, {b"cf:b": b"%d" % i})
        assert a.table("t").row(row) == {b"cf:a": b"%d" % i, b"cf:b": b"%d" % i}
        a.table("t").put(b"r", {b"cf:a": b"%d" % i})
        assert b.table("t").row(b"r") == {b"cf:a": b"%d" % i}
    assert sum(1 for _ in b.table("t").scan()) == 51


def test_table_changes_through_one_worker_are_seen_by_the_next_call_on_another(
    two_workers,
) -> None:
    a, b = connections_on_two_workers(two_workers)
    a.create_table("t", {"cf": {}})
    b.table("t").put(b"r", {b"cf:a": b"1"})
    a.disable_table("t")
    assert not b.is_table_enabled("t")
    with pytest.raises(ThriftIOError, match="TableNotEnabledException"):
        b.table("t").row(b"r")
    a.enable_table("t")
    assert b.table("t").row(b"r") == {b"cf:a": b"1"}
    a.delete_table("t", disable=True)
    assert b.tables() == []
    with pytest.raises(ThriftIOError, match="TableNotFoundException"):
        b.table("t").row(b"r")
    a.create_table("t", {"cf": {}, "other": {}})  # the same name, a new table
    assert b.table("t").row(b"r") == {}
    b.table("t").put(b"r", {b"other:x": b"2"})
    assert a.table("t").row(b"r") == {b"other:x": b"2"}


def test_puts_in_the_same_millisecond_on_two_workers_keep_the_last_write(two_workers) -> None:
    a, b = connections_on_two_workers(two_workers)
    a.create_table("t", {"cf": {"max_versions": 1}})
    for i in range(200):
        writer, reader = (a, b) if i % 2 else (b, a)
        writer.table("t").put(b"r", {b"cf:a": b"%d" % i})
        assert reader.table("t").row(b"r") == {b"cf:a": b"%d" % i}
    a.table("t").put(b"r", {b"cf:a": b"a"}, timestamp=5)
    b.table("t").put(b"r", {b"cf:a": b"b"}, timestamp=5)
    assert a.table("t").cells(b"r", b"cf:a", timestamp=6, include_timestamp=True) == [(b"b", 5)]


def test_counters_from_many_clients_on_every_worker_add_up_exactly(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, workers=2) as gateway:
        admin = happybase.Connection(**gateway.connection_kwargs())
        admin.create_table("t", {"cf": {}})
        clients = [happybase.Connection(**gateway.connection_kwargs()) for _ in range(6)]
        assert len({worker_of(gateway, client) for client in clients}) == 2
        errors: list[BaseException] = []

        def bump(connection: happybase.Connection, amount: int) -> None:
            try:
                for _ in range(150):
                    connection.table("t").counter_inc(b"c", b"cf:n", amount)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [
            threading.Thread(target=bump, args=(client, i + 1)) for i, client in enumerate(clients)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert admin.table("t").counter_get(b"c", b"cf:n") == 150 * sum(range(1, 7))
        (stored,) = struct.unpack(">q", admin.table("t").row(b"c")[b"cf:n"])
        assert stored == 150 * 21


def test_the_connection_cap_is_the_total_and_the_longest_idle_goes_whichever_worker_has_it(
    tmp_path: Path,
) -> None:
    with EmbeddedGateway(tmp_path, workers=2, server_args=("--max-connections", "3")) as gateway:
        held = held_connections(gateway, 3)
        pids = [serving_pid(gateway, sock.getsockname()[1]) for sock in held]
        assert len(set(pids)) == 2
        crossed = False
        for _ in range(6):  # whichever worker takes the newcomer, the longest-idle one goes
            (newcomer,) = held_connections(gateway, 1)
            oldest, oldest_pid = held.pop(0), pids.pop(0)
            assert closed_by_server(oldest)
            assert all(still_open(sock) for sock in held)
            pid = serving_pid(gateway, newcomer.getsockname()[1])
            crossed = crossed or pid != oldest_pid
            held.append(newcomer)
            pids.append(pid)
        assert crossed, "no newcomer took the slot of a connection on the other worker"
        for sock in held:
            sock.close()


def test_sigterm_lets_a_call_in_flight_finish_then_every_process_exits(tmp_path: Path) -> None:
    gateway = EmbeddedGateway(tmp_path, workers=2).start()
    children = child_pids(gateway.pid)
    connection = happybase.Connection(**gateway.connection_kwargs())
    connection.create_table("t", {"cf": {}})
    table = connection.table("t")
    with table.batch(batch_size=10_000) as batch:
        for i in range(100_000):
            batch.put(b"r%06d" % i, {b"cf:a": b"x"})
    # A call that is long on the server and small on the wire: a filter matching no row
    # makes one scannerGetList read the whole table.
    scan = Hbase_thrift.TScan(filterString=b"ValueFilter(=, 'binary:nothing')")
    scanner = connection.client.scannerOpenWithScan(b"t", scan, {})
    answers: list[object] = []
    call = threading.Thread(
        target=lambda: answers.append(connection.client.scannerGetList(scanner, 1))
    )
    call.start()
    time.sleep(0.2)  # the call is being served
    assert gateway.stop() == 0
    call.join(30)
    assert answers == [[]]
    assert not any(map(pid_alive, children))
    assert "did not stop in time" not in gateway.log_path.read_text()
    with EmbeddedGateway(tmp_path, workers=1) as restarted:
        reopened = happybase.Connection(**restarted.connection_kwargs())
        assert sum(1 for _ in reopened.table("t").scan()) == 100_000


def test_sigkill_of_the_parent_leaves_no_worker_behind(tmp_path: Path) -> None:
    gateway = EmbeddedGateway(tmp_path, workers=2).start()
    children = child_pids(gateway.pid)
    assert len(children) == 3
    os.kill(gateway.pid, signal.SIGKILL)
    assert wait_for(lambda: not any(map(pid_alive, children)), timeout_s=10)
    gateway.kill()  # reaps the parent


def test_a_worker_that_dies_is_logged_and_replaced(tmp_path: Path) -> None:
    args = ("--max-connections", "2", "--compact-after-cells", "0")
    with EmbeddedGateway(tmp_path, workers=2, server_args=args, metrics_port=0) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", {"cf": {}})
        connection.table("t").put(b"r", {b"cf:a": b"1"})
        victim = worker_of(gateway, connection)
        os.kill(victim, signal.SIGKILL)
        with pytest.raises((TTransportException, ConnectionError, OSError)):
            connection.tables()  # its connection died with it

        def replaced() -> bool:
            children = child_pids(gateway.pid)  # two workers, the upkeep and metrics processes
            return len(children) == 4 and victim not in children

        assert wait_for(replaced)
        log = gateway.log_path.read_text()
        assert re.search(rf"worker [01] \(pid {victim}\) was killed by SIGKILL; starting", log)
        # the dead worker's slot was freed with it
        assert wait_for(lambda: scrape(gateway).value("hbase_gateway_connections") == 0)
        clients = [happybase.Connection(**gateway.connection_kwargs()) for _ in range(2)]
        for client in clients:
            assert client.table("t").row(b"r") == {b"cf:a": b"1"}
        assert scrape(gateway).value("hbase_gateway_connections") == 2
        for client in clients:
            client.close()


def test_a_large_batch_through_one_worker_is_read_at_once_through_another(two_workers) -> None:
    """Such a batch is acknowledged from the pending log; the other worker's read applies it."""
    a, b = connections_on_two_workers(two_workers)
    a.create_table("t", {"cf": {}})
    for round_ in range(5):
        with a.table("t").batch(batch_size=5_000) as batch:
            for i in range(2_000):
                batch.put(b"r%05d" % i, {b"cf:a": b"%d" % round_})
        assert b.table("t").row(b"r01999") == {b"cf:a": b"%d" % round_}
        assert (
            sum(1 for _ in b.table("t").scan(filter=b"ValueFilter(=, 'binary:%d')" % round_))
            == 2_000
        )
