"""Event generator throughput: events per second end to end (population, events, JSON, gzip).

Run: ``.venv/bin/python bench/generator.py`` (fixed seed; ``--events`` to change the volume).
The issue's target is at least 1M events per minute (~16.7k events/s) on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from datetime import date
from pathlib import Path

from profile_store.generator.lake import generate_lake

SEED = 7
START = date(2026, 11, 1)


def _bytes_written(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*.jsonl.gz"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1_000_000, help="events per run")
    args = parser.parse_args()

    # The same total volume as one big day and as a week of smaller days.
    runs = [(1, args.events), (5, args.events // 5)]
    print(f"cores={os.cpu_count()} seed={SEED}")
    header = f"{'days':>4} {'events/day':>11} {'events':>10} {'seconds':>8} {'events/s':>10}"
    print(f"{header} {'events/min':>11} {'gzip MB':>8}")
    for days, per_day in runs:
        with tempfile.TemporaryDirectory() as directory:
            summary = generate_lake(Path(directory), days, per_day, SEED, START)
            megabytes = _bytes_written(Path(directory)) / 1e6
        rate = summary.events_per_second
        print(
            f"{days:>4} {per_day:>11,} {summary.events:>10,} {summary.seconds:>8.1f} "
            f"{rate:>10,.0f} {rate * 60:>11,.0f} {megabytes:>8.1f}"
        )


if __name__ == "__main__":
    main()
