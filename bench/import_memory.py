"""Benchmark: ``profiles import`` on CSV sources of growing size, with a small, fixed Spark heap.

Fixed seed. Writes click-log CSVs (ip, app, device, os, channel, click_time over 4 days) of the
sizes asked for, imports each with ``profiles import`` (a subprocess, as a user runs it, with
``SPARK_DRIVER_MEMORY`` fixed), and samples the resident memory of the command's whole process
tree (the Python CLI and Spark's JVM) every 0.2 s. Memory that stays flat while the source grows
past the heap is what "streamed, never a whole file in memory" means in numbers. Usage::

    python bench/import_memory.py [--sizes-mb 256,2048] [--driver-memory 1g] [--seed 7]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

MAPPING = """\
source: {format: csv}
app_id: {column: app, prefix: "bench."}
event_type: {value: click}
user_id: ip
id_type: {value: cookie}
event_time: {column: click_time, format: "yyyy-MM-dd HH:mm:ss"}
attributes: {platform: os, device: device, channel: channel}
"""
CHUNK_ROWS = 1_000_000
START_SECONDS = 1_509_926_400  # 2017-11-06T00:00:00Z


def write_clicks(path: Path, target_bytes: int, rng: np.random.Generator) -> int:
    """A click log of about ``target_bytes``; returns its rows."""
    rows = 0
    schema = pa.schema(
        [(name, pa.int64()) for name in ("ip", "app", "device", "os", "channel")]
        + [("click_time", pa.string())]
    )
    with pacsv.CSVWriter(path, schema) as writer:
        while path.stat().st_size < target_bytes:
            seconds = START_SECONDS + rng.integers(0, 4 * 86_400, CHUNK_ROWS)
            times = pc.strftime(pa.array(seconds, pa.timestamp("s")), format="%Y-%m-%d %H:%M:%S")
            columns = [
                pa.array(rng.integers(1, 300_000, CHUNK_ROWS)),
                pa.array(rng.zipf(1.6, CHUNK_ROWS) % 700),
                pa.array(rng.zipf(2.0, CHUNK_ROWS) % 4000),
                pa.array(rng.zipf(1.8, CHUNK_ROWS) % 900),
                pa.array(rng.integers(0, 500, CHUNK_ROWS)),
                times,
            ]
            writer.write_table(pa.Table.from_arrays(columns, schema=schema))
            rows += CHUNK_ROWS
    return rows


def tree_rss_bytes(root_pid: int) -> int:
    """Resident memory of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            statm = (entry / "statm").read_text().split()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
        rss[int(entry.name)] = int(statm[1]) * page
    total, stack = 0, [root_pid]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def import_with_peak(source: Path, mapping: Path, lake: Path, driver_memory: str) -> dict:
    env = {**os.environ, "SPARK_DRIVER_MEMORY": driver_memory}
    command = [sys.executable, "-m", "profile_store.cli", "import", str(source)]
    command += ["--mapping", str(mapping), "--lake", str(lake)]
    started = time.monotonic()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.2):
            peak = max(peak, tree_rss_bytes(process.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output, _ = process.communicate()
    done.set()
    sampler.join()
    if process.returncode != 0:
        raise SystemExit(f"import failed:\n{output[-4000:]}")
    return {"seconds": time.monotonic() - started, "peak_rss": peak, "output": output}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-mb", default="256,2048")
    parser.add_argument("--driver-memory", default="1g")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes_mb.split(",")]
    rng = np.random.default_rng(args.seed)
    print(f"machine: {machine()}; SPARK_DRIVER_MEMORY={args.driver_memory}")
    print("| source | rows | import | rows/s | peak RSS (CLI + Spark JVM) |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="import-bench-") as tmp:
        work = Path(tmp)
        mapping = work / "clicks.yaml"
        mapping.write_text(MAPPING)
        for size in sizes:
            source = work / f"clicks-{size}.csv"
            rows = write_clicks(source, size * 1024 * 1024, rng)
            result = import_with_peak(source, mapping, work / f"lake-{size}", args.driver_memory)
            source_mb = source.stat().st_size / 1024 / 1024
            print(
                f"| {source_mb:,.0f} MB | {rows:,} | {result['seconds']:.1f} s | "
                f"{rows / result['seconds']:,.0f} | {result['peak_rss'] / 1024 / 1024:,.0f} MB |",
                flush=True,
            )
            source.unlink()


if __name__ == "__main__":
    main()
