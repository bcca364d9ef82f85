"""The embedded gateway's bulk load alone: what the store spends adopting a day's profile cells.

Fixed seed. Builds profile-shaped cells in Arrow (per row the five ``s:`` cells, 0-3 segments,
0-2 counters of 24 bytes, 0-2 associations; about eight cells a row), split into ``--files``
batches as Spark's files would be, and times ``load_replacing_rows`` with the profiles'
replacement (``bulk_profiles.PROFILE_REPLACEMENT``) in this process, for:

1. a day's rows into an empty table;
2. the same rows a day later (a newer ``s:as_of``, a fifth of the segments changed or dropped:
   the dropped ones deleted);
3. with ``--other-rows`` rows stored first that the load does not touch (as a store of many
   days holds): the day's load again, to show its cost does not grow with the table.

Prints wall seconds, CPU-seconds of this process (the store is SQLite in the process) and
microseconds of CPU per cell, best of ``--runs``::

    .venv/bin/python bench/bulk_load.py [--rows 215000] [--files 8] [--other-rows 500000]
"""

from __future__ import annotations

import argparse
import bisect
import random
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

from profile_store.hbase_gateway.bulk_load import load_replacing_rows  # noqa: E402
from profile_store.hbase_gateway.schema import FamilyDescriptor  # noqa: E402
from profile_store.hbase_gateway.store import Store  # noqa: E402
from profile_store.profiles.bulk_profiles import PROFILE_REPLACEMENT  # noqa: E402
from profile_store.profiles.table import FAMILIES, PROFILE_PREFIX  # noqa: E402

TABLE = b"profiles"


def day_cells(rows: range, as_of: int, seed: int, prefix: bytes = b"") -> list[tuple]:
    """The cells of ``rows`` as ``(row, family, qualifier, value)``, in row order."""
    rng = random.Random(seed)
    cells: list[tuple] = []
    for number in rows:
        row = PROFILE_PREFIX + prefix + b"%019d" % number
        own = {
            b"type": b"profile",
            b"first_seen": b"1788000000000",
            b"id_type": b"cookie",
            b"devices": b"%d" % (number % 3 + 1),
            b"as_of": b"%d" % as_of,
        }
        cells += [(row, "s", q, v) for q, v in own.items()]
        cells += [
            (row, "g", b"seg_%d" % rng.randrange(40), b"%d" % as_of)
            for _ in range(rng.randrange(4))
        ]
        cells += [(row, "f", b"c_%d" % c, rng.randbytes(24)) for c in range(rng.randrange(3))]
        cells += [
            (row, "a", b"%019d" % rng.randrange(10**9), b"idfa") for _ in range(rng.randrange(3))
        ]
    return cells


def batches(cells: list[tuple], files: int) -> list[pa.Table]:
    """``cells`` in ``files`` tables, a row's cells in one of them."""
    rows = sorted({cell[0] for cell in cells})
    bounds = [rows[len(rows) * i // files] for i in range(1, files)]
    parts: list[list[tuple]] = [[] for _ in range(files)]
    for cell in cells:
        parts[bisect.bisect_right(bounds, cell[0])].append(cell)
    return [
        pa.table(
            {
                "row": pa.array([c[0] for c in part], pa.binary()),
                "family": pa.array([c[1] for c in part], pa.string()),
                "qualifier": pa.array([c[2] for c in part], pa.binary()),
                "value": pa.array([c[3] for c in part], pa.binary()),
            }
        )
        for part in parts
    ]


def new_store(directory: Path) -> Store:
    store = Store(directory)
    store.create_table(TABLE, [FamilyDescriptor(k.encode(), **v) for k, v in FAMILIES.items()])
    return store


def timed_load(store: Store, files: list[pa.Table], timestamp: int) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    load_replacing_rows(store, TABLE, files, PROFILE_REPLACEMENT, timestamp)
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=215_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--other-rows", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    first = day_cells(range(args.rows), 1, args.seed)
    second = day_cells(range(args.rows), 2, args.seed + 1)
    first_files, second_files = batches(first, args.files), batches(second, args.files)
    others = batches(day_cells(range(args.other_rows), 1, args.seed + 2, b"o"), args.files)
    results: dict[str, list[tuple[float, float]]] = {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-bulk-load-") as directory:
            store = new_store(Path(directory) / "empty")
            results.setdefault("a day's rows into an empty table", []).append(
                timed_load(store, first_files, 1000)
            )
            results.setdefault("the same rows a day later", []).append(
                timed_load(store, second_files, 2000)
            )
            store.close()
            store = new_store(Path(directory) / "full")
            load_replacing_rows(store, TABLE, others, PROFILE_REPLACEMENT, 500)
            timed_load(store, first_files, 1000)
            results.setdefault(f"the same, {args.other_rows:,} other rows stored", []).append(
                timed_load(store, second_files, 2000)
            )
            store.close()

    print(f"Machine: {machine()}")
    print(
        f"{args.rows:,} profile rows in {args.files} files (seed {args.seed}): "
        f"{len(first):,} cells the first day, {len(second):,} the second; best of {args.runs}"
    )
    print()
    print("| load | cells | wall s | CPU-s | CPU microseconds per cell |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for case, timings in results.items():
        wall, cpu = min(timings, key=lambda timing: timing[1])
        cells = len(first) if case.startswith("a day") else len(second)
        print(f"| {case} | {cells:,} | {wall:.2f} | {cpu:.2f} | {cpu / cells * 1e6:.2f} |")


if __name__ == "__main__":
    main()
