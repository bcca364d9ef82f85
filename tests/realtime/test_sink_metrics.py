"""``profiles stream lake-sink --metrics-port``: the sink's lag, events written and write time,
scraped from the real process."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from landing_files import event_line

from profile_store.event_bus.producer import EventProducer
from profile_store.realtime.event_keys import keyed_lines

REPO = Path(__file__).resolve().parents[2]


def metric(text: str, name: str) -> float | None:
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else None


def test_the_lake_sink_serves_its_lag_events_and_write_time(bus, tmp_path):
    with EventProducer(bus) as producer:
        producer.send(
            keyed_lines([event_line(f"e{i}", "2026-11-01T10:00:00Z", f"u{i}") for i in range(25)])
        )
    log = tmp_path / "sink.log"
    env = {
        **os.environ,
        "PROFILES_KAFKA_BOOTSTRAP_SERVERS": bus.bootstrap_servers,
        "PROFILES_KAFKA_TOPIC": bus.topic,
    }
    command = [sys.executable, "-m", "profile_store.cli", "stream", "lake-sink"]
    command += ["--lake", str(tmp_path / "lake"), "--group-id", f"g-{bus.topic}"]
    command += ["--flush-seconds", "0.5", "--metrics-port", "0"]
    with open(log, "wb") as out:
        process = subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 180  # only against hanging forever
        text = ""
        while time.monotonic() < deadline:
            port = re.search(r"metrics on http://127\.0\.0\.1:(\d+)/metrics", log.read_text())
            if port:
                text = httpx.get(f"http://127.0.0.1:{port.group(1)}/metrics", timeout=30).text
                written = metric(text, "profiles_lake_sink_events_total")
                lag = metric(text, "profiles_lake_sink_lag_messages")
                if written == 25 and lag == 0:
                    break
            assert process.poll() is None, log.read_text()
            time.sleep(0.5)
        assert metric(text, "profiles_lake_sink_events_total") == 25, text
        assert metric(text, "profiles_lake_sink_lag_messages") == 0
        assert metric(text, "profiles_lake_sink_write_seconds_count") >= 1
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 0, log.read_text()
