"""Event generator throughput and memory: events/s end to end (population, events, JSON, gzip)
and the peak resident memory of the generating process.

Run: ``.venv/bin/python bench/generator.py`` (fixed seed; ``--events`` to change the volume).
Bars: at least 1M events per minute (~16.7k events/s) on 2 cores; at most 2 GB resident at
2M events a day (a day is written a part file at a time, see ``generator.lake.DayLines``).
Each run is its own process, so that its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

from profile_store.generator.lake import generate_lake

SEED = 7
START = date(2026, 11, 1)


def _bytes_written(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*.jsonl.gz"))


def run_once(days: int, per_day: int) -> None:
    """One generation in this process; prints the table row."""
    with tempfile.TemporaryDirectory() as directory:
        summary = generate_lake(Path(directory), days, per_day, SEED, START)
        megabytes = _bytes_written(Path(directory)) / 1e6
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9
    rate = summary.events_per_second
    print(
        f"{days:>4} {per_day:>11,} {summary.events:>10,} {summary.seconds:>8.1f} "
        f"{rate:>10,.0f} {rate * 60:>11,.0f} {megabytes:>8.1f} {peak_gb:>8.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000, help="events per run")
    parser.add_argument("--one", nargs=2, type=int, metavar=("DAYS", "PER_DAY"), help="internal")
    args = parser.parse_args()
    if args.one:
        run_once(*args.one)
        return

    # The same total volume as one big day and as a week of smaller days; then the memory case.
    runs = [(1, args.events), (5, args.events // 5), (3, 2_000_000)]
    print(f"cores={os.cpu_count()} seed={SEED}")
    header = f"{'days':>4} {'events/day':>11} {'events':>10} {'seconds':>8} {'events/s':>10}"
    print(f"{header} {'events/min':>11} {'gzip MB':>8} {'peak GB':>8}")
    for days, per_day in runs:
        subprocess.run([sys.executable, __file__, "--one", str(days), str(per_day)], check=True)


if __name__ == "__main__":
    main()
