"""``/healthz`` and ``/readyz`` beside ``/metrics`` of the real stream processes
(``profiles stream lake-sink`` and ``live-profiles``) against the suite's real Kafka and a real
gateway, as a container's health check or an orchestrator's probe sees them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from landing_files import drive
from live_rows import lake_with_rules, message, recent_ms

from profile_store.event_bus.producer import EventProducer
from profile_store.event_bus.settings import EventBusSettings
from profile_store.hbase_gateway.process import EmbeddedGateway

REPO = Path(__file__).resolve().parents[2]


class StreamProcess:
    """A ``profiles stream`` process with ``--metrics-port 0``, and its probes."""

    def __init__(self, process: subprocess.Popen, log: Path) -> None:
        self.process = process
        self.log = log
        self.port: int | None = None

    def probe(self, path: str) -> tuple[int, str] | None:
        """``(status, body)`` of ``GET path``; None until the listener is up."""
        assert self.process.poll() is None, self.log.read_text()
        if self.port is None:
            found = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/", self.log.read_text())
            if found is None:
                return None
            self.port = int(found.group(1))
        response = httpx.get(f"http://127.0.0.1:{self.port}{path}", timeout=30)
        return response.status_code, response.text

    def wait_for(self, path: str, expected: tuple[int, str]) -> None:
        drive(lambda: None, lambda: self.probe(path) == expected)


@contextmanager
def stream(bus: EventBusSettings, tmp_path: Path, job: str, *args: str) -> Iterator[StreamProcess]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
        "PROFILES_KAFKA_TOPIC": bus.topic,
    }
    command = [sys.executable, "-m", "profile_store.cli", "stream", job]
    command += ["--lake", str(tmp_path / "lake"), "--metrics-port", "0", *args]
    log = tmp_path / f"{job}.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stderr=out)
    try:
        yield StreamProcess(process, log)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0, log.read_text()


def live_args(tmp_path: Path, gateway: EmbeddedGateway, *more: str) -> tuple[str, ...]:
    lake_with_rules(tmp_path / "lake")
    return (
        *("--group-id", f"health-{tmp_path.name}"),
        *("--hbase-host", gateway.host, "--hbase-port", str(gateway.port)),
        *more,
    )


def send(bus: EventBusSettings, event_id: str) -> None:
    with EventProducer(bus) as producer:
        producer.send([message(event_id, f"user-{event_id}", recent_ms(30))])


def test_the_lake_sink_is_ready_once_its_group_gave_it_partitions(bus, tmp_path):
    with stream(bus, tmp_path, "lake-sink", "--group-id", f"health-{bus.topic}") as sink:
        waited: set[tuple[int, str]] = set()

        def ready() -> bool:
            answer = sink.probe("/readyz")
            if answer is not None and answer[0] != 200:
                waited.add(answer)
            return answer == (200, "ok\n")

        drive(lambda: None, ready)
        assert waited <= {(503, "waiting for partitions from the Kafka consumer group\n")}
        assert sink.probe("/healthz") == (200, "ok\n")
        assert sink.probe("/metrics")[1].startswith("# HELP profiles_lake_sink")


def test_the_live_job_is_not_ready_while_hbase_fails_and_ready_again_after(bus, tmp_path):
    gateway = EmbeddedGateway(tmp_path / "hbase", workers=1).start()
    port = gateway.port
    try:
        with stream(bus, tmp_path, "live-profiles", *live_args(tmp_path, gateway)) as job:
            job.wait_for("/readyz", (200, "ok\n"))
            gateway.kill()
            send(bus, "while-down")
            drive(lambda: None, lambda: job.probe("/readyz")[1].startswith("HBase: failing"))
            assert job.probe("/readyz")[0] == 503
            assert job.probe("/healthz") == (200, "ok\n")  # retrying is not wedged
            gateway = EmbeddedGateway(tmp_path / "hbase", workers=1, port=port).start()
            job.wait_for("/readyz", (200, "ok\n"))
    finally:
        gateway.stop()


def test_the_live_job_is_not_live_while_its_consume_loop_is_stuck(bus, tmp_path):
    with EmbeddedGateway(tmp_path / "hbase", workers=1) as gateway:
        args = live_args(tmp_path, gateway, "--liveness-timeout", "2")
        with stream(bus, tmp_path, "live-profiles", *args) as job:
            job.wait_for("/readyz", (200, "ok\n"))
            os.kill(gateway.pid, signal.SIGSTOP)  # a write to it waits, and so does the loop
            try:
                send(bus, "while-stopped")
                drive(lambda: None, lambda: job.probe("/healthz")[0] == 503)
                status, why = job.probe("/healthz")
                assert status == 503
                assert why.startswith("the consume loop has not come back for")
                assert why.endswith("(bound 2 s)\n")
            finally:
                os.kill(gateway.pid, signal.SIGCONT)
            job.wait_for("/healthz", (200, "ok\n"))
