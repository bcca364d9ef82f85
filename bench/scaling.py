"""How a day's cost grows with events per day, cores and executors, on a standalone cluster.

Fixed seed. For each size, generates two landing days; for each cluster layout (``WxC``: W
workers of C cores each, so W executors of C cores), starts a Spark standalone cluster of
pyspark's own (``profile_store.launchers.spark_standalone``), runs every asset and check of both
days on it (``profile_assets.materialize_days``, embedded gateway, lake directory) and keeps the
seconds of each step of the second day (an incremental day, as in production). Prints a table of
seconds per step, then per step and layout a least squares line over the sizes (fixed seconds +
seconds per million events) and the speed-up of each layout over the first at the largest size.
``2x1`` against ``1x1`` is a second executor of its own: tasks in two JVMs and shuffles between
them, as on a real cluster. docs/benchmarks.md's scaling section is written from this output::

    .venv/bin/python bench/scaling.py [--sizes 200000,400000,800000] [--layouts 1x1,1x2,2x1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

from profile_store.generator import generate_lake  # noqa: E402
from profile_store.lake.layout import GROUND_TRUTH, LANDING  # noqa: E402
from profile_store.launchers.spark_standalone import SparkStandalone  # noqa: E402

DAYS = ("2026-11-01", "2026-11-02")


@dataclass(frozen=True)
class Layout:
    """``workers`` workers of ``cores`` cores each (one executor per worker)."""

    workers: int
    cores: int

    @classmethod
    def parse(cls, text: str) -> Layout:
        workers, _, cores = text.partition("x")
        try:
            layout = cls(int(workers), int(cores))
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"--layouts: expected WORKERSxCORES such as 2x1, got {text!r}"
            ) from None
        if layout.workers < 1 or layout.cores < 1:
            raise argparse.ArgumentTypeError(f"--layouts: {text!r} needs at least 1x1")
        return layout

    @property
    def total_cores(self) -> int:
        return self.workers * self.cores

    def __str__(self) -> str:
        return f"{self.workers}x{self.cores}"


def run_days(lake: Path, work: Path, layout: Layout) -> dict[str, float]:
    """Both days on a fresh cluster of that layout; the second day's seconds per step."""
    hbase_dir, timings = work / "hbase", work / "timings.json"
    # The worker's memory is split among its workers; each executor takes most of its worker's.
    worker_gb = max(6 // layout.workers, 2)
    with SparkStandalone(
        work / "spark", cores=layout.cores, memory=f"{worker_gb}g", workers=layout.workers
    ) as cluster:
        env = {
            **os.environ,
            "PROFILES_LAKE_ROOT": str(lake),
            "PROFILES_HBASE_DATA_DIR": str(hbase_dir),
            "PROFILES_START_DATE": DAYS[0],
            "PYSPARK_PYTHON": sys.executable,
            "SPARK_MASTER": cluster.master_url,
            "SPARK_SHUFFLE_PARTITIONS": str(2 * layout.total_cores),
            "SPARK_CONF_JSON": json.dumps({"spark.executor.memory": f"{worker_gb - 1}g"}),
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
    parser.add_argument(
        "--layouts",
        default="1x1,1x2,2x1",
        help="cluster layouts WORKERSxCORES, the first the baseline of the speed-ups",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--work-dir", type=Path, default=Path("data/bench-scaling"))
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    try:
        layouts = [Layout.parse(text) for text in args.layouts.split(",")]
    except argparse.ArgumentTypeError as error:
        parser.error(str(error))

    seconds: dict[tuple[int, Layout], dict[str, float]] = {}
    for size in sizes:
        source = args.work_dir / f"{size}-seed{args.seed}"
        if not (source / LANDING).exists():
            print(f"generating 2 x {size:,} events ...", flush=True)
            shutil.rmtree(source, ignore_errors=True)
            generate_lake(source, 2, size, seed=args.seed, start_date=date.fromisoformat(DAYS[0]))
        for layout in layouts:
            with tempfile.TemporaryDirectory(prefix="scaling-") as scratch:
                work = Path(scratch)
                shutil.copytree(source / LANDING, work / "lake" / LANDING)
                shutil.copytree(source / GROUND_TRUTH, work / "lake" / GROUND_TRUTH)
                print(f"{size:,} events/day on {layout} (workers x cores) ...", flush=True)
                seconds[(size, layout)] = run_days(work / "lake", work, layout)

    def at(size: int, layout: Layout, step: str) -> float:
        found = seconds[(size, layout)]
        return sum(found.values()) if step == "total" else found[step]

    largest, first = sizes[-1], layouts[0]
    steps = sorted(seconds[(sizes[0], first)], key=lambda s: -at(largest, layouts[-1], s))
    columns = [(size, layout) for size in sizes for layout in layouts]
    print(f"\nmachine: {machine()}")
    print(f"seconds of the second (incremental) day per step; seed {args.seed}; layouts are")
    print("workers x cores each\n")
    print("| step | " + " | ".join(f"{s / 1e6:g}M, {lay}" for s, lay in columns) + " |")
    print("| --- |" + " ---: |" * len(columns))
    for step in [*steps, "total"]:
        values = [at(size, layout, step) for size, layout in columns]
        print(f"| {step} | " + " | ".join(f"{v:.1f}" for v in values) + " |")

    print("\nper step and layout: fixed s / s per 1M events (least squares over the sizes);")
    print(f"speed-up over {first} at {largest:,} events\n")
    others = layouts[1:]
    print(
        "| step | "
        + " | ".join(f"{lay}: fixed / per 1M" for lay in layouts)
        + "".join(f" | {lay} vs {first}" for lay in others)
        + " |"
    )
    print("| --- |" + " ---: |" * (len(layouts) + len(others)))
    for step in [*steps, "total"]:
        fits = [fit([(size / 1e6, at(size, lay, step)) for size in sizes]) for lay in layouts]
        speedups = [at(largest, first, step) / max(at(largest, lay, step), 1e-9) for lay in others]
        print(
            f"| {step} | "
            + " | ".join(f"{fixed:.1f} / {per:.1f}" for fixed, per in fits)
            + "".join(f" | {speedup:.2f}x" for speedup in speedups)
            + " |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
