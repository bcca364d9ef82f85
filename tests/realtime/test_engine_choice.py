"""Does Spark's Kafka source run with this project's Spark? Maven Central serves
``spark-sql-kafka-0-10_2.13`` 4.2.0 but not 4.3.0, so the engine choice (docs/realtime.md)
rests on this test: the 4.2.0 source on PySpark 4.3.0 reads the real broker, runs
``foreachBatch``, and a new query over the same checkpoint starts exactly where the last ended.
It runs the benchmark's own Structured Streaming job (``bench/realtime_engines.py spark-job``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from landing_files import drive

from profile_store.event_bus.producer import EventProducer

REPO = Path(__file__).resolve().parents[2]


def wait_for(path: Path, process: subprocess.Popen) -> None:
    def alive() -> None:
        assert process.poll() is None, process.stdout.read().decode(errors="replace")[-4000:]
        time.sleep(0.2)

    drive(alive, path.exists, timeout=600)


def test_spark_reads_the_broker_in_foreach_batch_and_resumes_from_its_checkpoint(bus, tmp_path):
    with EventProducer(bus) as producer:
        producer.send([(f"u{i % 13}", f'{{"n":{i}}}'.encode()) for i in range(300)])
    out = tmp_path / "batches.jsonl"
    job = subprocess.Popen(
        [
            sys.executable,
            str(REPO / "bench" / "realtime_engines.py"),
            "spark-job",
            *("--bootstrap", bus.bootstrap_servers, "--topic", bus.topic),
            *("--checkpoint", str(tmp_path / "checkpoint"), "--out", str(out), "--runs", "2"),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(Path(f"{out}.done-1"), job)
        first = [json.loads(line) for line in out.read_text().splitlines()]
        with EventProducer(bus) as producer:
            producer.send([(f"u{i % 13}", f'{{"n":{i}}}'.encode()) for i in range(300, 500)])
        Path(f"{out}.go-2").write_text("")
        wait_for(Path(f"{out}.done-2"), job)
        assert job.wait(300) == 0
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    second = [json.loads(line) for line in out.read_text().splitlines()][len(first) :]

    assert sum(batch["rows"] for batch in first) == 300
    assert sum(batch["rows"] for batch in second) == 200
    ended = {p: max(b["offsets"][p][1] for b in first if p in b["offsets"]) for p in ("0", "1")}
    resumed = {p: min(b["offsets"][p][0] for b in second if p in b["offsets"]) for p in ("0", "1")}
    assert resumed == {p: end + 1 for p, end in ended.items()}
    assert [batch["batch_id"] for batch in first + second] == list(range(len(first + second)))
