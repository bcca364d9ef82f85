"""How a day's cost grows with events per day and with executor cores, on a standalone cluster.

Fixed seed. For each size, generates two landing days; for each number of cores, starts a Spark
standalone cluster of pyspark's own (``profile_store.launchers.spark_standalone``, one worker with
that many cores), runs every asset and check of both days on it
(``profile_assets.materialize_days``, embedded gateway, lake directory) and keeps the seconds of
each step of the second day (an incremental day, as in production). Prints a table of seconds per
step, then per step a least squares line over the sizes at the most cores (fixed seconds + seconds
per million events) and the speed-up from the fewest to the most cores at the largest size.
docs/benchmarks.md's scaling section is written from this output::

    .venv/bin/python bench/scaling.py [--sizes 200000,400000,800000] [--cores 1,2] [--seed 7]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

from profile_store.generator import generate_lake  # noqa: E402
from profile_store.lake.layout import GROUND_TRUTH, LANDING  # noqa: E402
from profile_store.launchers.spark_standalone import SparkStandalone  # noqa: E402

DAYS = ("2026-11-01", "2026-11-02")


def run_days(lake: Path, work: Path, cores: int) -> dict[str, float]:
    """Both days on a fresh cluster of ``cores`` cores; the second day's seconds per step."""
    hbase_dir, timings = work / "hbase", work / "timings.json"
    with SparkStandalone(work / "spark", cores=cores, memory="6g") as cluster:
        env = {
            **os.environ,
            "PROFILES_LAKE_ROOT": str(lake),
            "PROFILES_HBASE_DATA_DIR": str(hbase_dir),
            "PROFILES_START_DATE": DAYS[0],
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_MASTER": cluster.master_url,
            "SPARK_SHUFFLE_PARTITIONS": str(2 * cores),
            "SPARK_CONF_JSON": json.dumps({"spark.executor.memory": "5g"}),
        }
        # Timings are what this measures; a check that does not pass is printed, not fatal.
        command = [sys.executable, "-m", "profile_assets.materialize_days", "--checks-may-fail"]
        subprocess.run([*command, "--timings", str(timings), *DAYS], env=env, check=True)
    return json.loads(timings.read_text())[DAYS[1]]


def fit(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least squares ``seconds = fixed + per_million * millions``."""
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread if spread else 0.0
    return mean_y - slope * mean_x, slope


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="200000,400000,800000", help="events per day")
    parser.add_argument("--cores", default="1,2", help="executor cores to compare")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=Path("data/bench-scaling"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    cores = [int(c) for c in args.cores.split(",")]

    seconds: dict[tuple[int, int], dict[str, float]] = {}
    for size in sizes:
        source = args.work_dir / f"{size}-seed{args.seed}"
        if not (source / LANDING).exists():
            print(f"generating 2 x {size:,} events ...", flush=True)
            shutil.rmtree(source, ignore_errors=True)
            generate_lake(source, 2, size, seed=args.seed, start_date=date.fromisoformat(DAYS[0]))
        for count in cores:
            with tempfile.TemporaryDirectory(prefix="scaling-") as scratch:
                work = Path(scratch)
                shutil.copytree(source / LANDING, work / "lake" / LANDING)
                shutil.copytree(source / GROUND_TRUTH, work / "lake" / GROUND_TRUTH)
                print(f"{size:,} events/day on {count} core(s) ...", flush=True)
                seconds[(size, count)] = run_days(work / "lake", work, count)

    steps = sorted(seconds[(sizes[0], cores[0])], key=lambda s: -seconds[(sizes[-1], cores[-1])][s])
    columns = [(size, count) for size in sizes for count in cores]
    print(f"\nmachine: {machine()}")
    print(f"seconds of the second (incremental) day per step; seed {args.seed}\n")
    print("| step | " + " | ".join(f"{s / 1e6:g}M x {c} core(s)" for s, c in columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    for step in [*steps, "total"]:
        values = [
            sum(seconds[column].values()) if step == "total" else seconds[column][step]
            for column in columns
        ]
        print(f"| {step} | " + " | ".join(f"{v:.1f}" for v in values) + " |")

    most, fewest = cores[-1], cores[0]
    print(f"\nper step at {most} core(s): fixed s + s per million events; speed-up from")
    print(f"{fewest} to {most} core(s) at {sizes[-1]:,} events\n")
    print("| step | fixed s | s per 1M events | speed-up |")
    print("| --- | ---: | ---: | ---: |")
    for step in [*steps, "total"]:

        def at(size: int, count: int, step: str = step) -> float:
            found = seconds[(size, count)]
            return sum(found.values()) if step == "total" else found[step]

        fixed, per_million = fit([(size / 1e6, at(size, most)) for size in sizes])
        speedup = at(sizes[-1], fewest) / max(at(sizes[-1], most), 1e-9)
        print(f"| {step} | {fixed:.1f} | {per_million:.1f} | {speedup:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
