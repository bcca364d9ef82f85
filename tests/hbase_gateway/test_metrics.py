"""``--metrics-port``: Prometheus metrics of the whole gateway (every worker, the upkeep process).

Scraped over HTTP from real gateway processes and parsed with prometheus_client's own parser.
"""

from __future__ import annotations

import socket
from pathlib import Path

import happybase
import Hbase_thrift
import pytest
from gateway_metrics import Scrape, scrape
from gateway_sockets import connections_on_two_workers, wait_for
from Hbase_thrift import IOError as ThriftIOError
from thrift_bytes import encoded_call, read_reply
from thriftpy2.thrift import TApplicationException

from profile_store.cli.main import build_parser
from profile_store.hbase_gateway.process import EmbeddedGateway

CALLS = "hbase_gateway_calls_total"
DURATIONS = "hbase_gateway_call_duration_seconds_count"


def test_metrics_are_off_unless_a_port_is_given(tmp_path: Path) -> None:
    assert (
        build_parser().parse_args(["hbase-gateway", "--data-dir", str(tmp_path)]).metrics_port
        is None
    )
    with EmbeddedGateway(tmp_path, workers=1) as gateway:
        assert gateway.metrics_port is None
        assert "metrics at" not in gateway.log_path.read_text()


def test_calls_through_two_workers_are_counted_together(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, workers=2, metrics_port=0) as gateway:
        a, b = connections_on_two_workers(gateway)
        before = scrape(gateway)
        for _ in range(5):
            a.tables()
        for _ in range(7):
            b.tables()
        with pytest.raises(ThriftIOError):
            b.table("missing").row(b"r")
        after = scrape(gateway)
        outcome = {"method": "getTableNames", "outcome": "success"}
        assert after.value(CALLS, **outcome) - before.value(CALLS, **outcome) == 12
        failed = {"method": "getRowWithColumns", "outcome": "IOError"}
        assert after.value(CALLS, **failed) - before.value(CALLS, **failed) == 1
        method = {"method": "getTableNames"}
        assert after.value(DURATIONS, **method) - before.value(DURATIONS, **method) == 12
        assert after.value("hbase_gateway_received_bytes_total") > before.value(
            "hbase_gateway_received_bytes_total"
        )
        assert after.value("hbase_gateway_sent_bytes_total") > before.value(
            "hbase_gateway_sent_bytes_total"
        )
        assert after.value("hbase_gateway_workers") == 2
        assert wait_for(lambda: scrape(gateway).value("hbase_gateway_connections") == 2)


def test_a_method_the_idl_lacks_is_counted_under_one_label(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, workers=1, metrics_port=0) as gateway:
        sock = socket.create_connection((gateway.host, gateway.port), timeout=30)
        made_up = encoded_call("made_up_method_name", Hbase_thrift.Hbase.getTableNames_args())
        sock.sendall(made_up)
        with pytest.raises(TApplicationException):
            read_reply(sock, "made_up_method_name", "binary", "buffered")
        sock.close()
        metrics = scrape(gateway)
    assert metrics.value(CALLS, method="(unknown)", outcome="TApplicationException") == 1
    assert "made_up_method_name" not in metrics.text


def test_batches_applied_and_compactions_of_the_upkeep_process_are_counted(
    tmp_path: Path,
) -> None:
    args = ("--compact-after-cells", "10", "--compact-interval", "0.2", "--compact-quiet", "0.1")
    with EmbeddedGateway(tmp_path, workers=2, server_args=args, metrics_port=0) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("versions", {"f": {"max_versions": 1}})
        versions = connection.table("versions")
        for timestamp in (1, 2, 3):
            with versions.batch(timestamp=timestamp) as batch:
                for row in range(20):
                    batch.put(b"r%02d" % row, {b"f:c": b"%d" % timestamp})
        # Twenty cells hold two versions too many each: the upkeep process compacts them.
        assert wait_for(
            lambda: scrape(gateway).value("hbase_gateway_compaction_reclaimed_cells_total") >= 40
        )
        assert scrape(gateway).value("hbase_gateway_compactions_total", kind="minor") >= 1

        before = scrape(gateway)
        connection.create_table("big", {"f": {}})
        with connection.table("big").batch(batch_size=2_000) as batch:  # deferred: >= 1,000
            for row in range(2_000):
                batch.put(b"r%05d" % row, {b"f:c": b"x"})
        assert sum(1 for _ in connection.table("big").scan()) == 2_000  # applied first
        after = scrape(gateway)
        applied = "hbase_gateway_pending_batches_applied_total"
        assert after.value(applied) - before.value(applied) == 1
        assert after.value("hbase_gateway_pending_batches") == 0

        connection.compact_table("versions", major=True)
        major = scrape(gateway).value("hbase_gateway_compactions_total", kind="major")
        assert major == 1
        assert scrape(gateway).value("hbase_gateway_store_bytes", file="hbase.sqlite3") > 0
        connection.close()


def test_a_single_process_gateway_serves_its_metrics_too(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, workers=1, metrics_port=0) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        connection.create_table("t", {"f": {}})
        metrics = scrape(gateway)
        connection.close()
    assert metrics.value(CALLS, method="createTable", outcome="success") == 1
    assert metrics.value("hbase_gateway_workers") == 1
    assert f"http://127.0.0.1:{gateway.metrics_port}/metrics" in gateway.log_path.read_text()


def test_every_metric_family_is_documented_in_the_gateway_readme(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[2] / "profile_store/hbase_gateway/README.md").read_text()
    with EmbeddedGateway(tmp_path, workers=1, metrics_port=0) as gateway:
        metrics: Scrape = scrape(gateway)
    names = {family.name for family in metrics.families.values()}
    assert len(names) > 15
    for name in names:
        assert f"`{name}" in readme, f"{name} is not in the gateway README"
