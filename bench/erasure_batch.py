"""Erasure at volume: N pending requests carried out by one run of the ``erasure`` asset.

Fixed seed. A generated lake (by default 3 days x 5,000 events, the reviewer's 15,000-event
lake) with every daily asset built into the embedded gateway (setup, not timed); then N
distinct persons, in a seeded order, each forgotten by one of their device ids through
``forget`` (the request, the suppression list, their HBase rows at once: also setup). Timed:
one run of the ``erasure`` asset (Dagster ``materialize``, the Spark session's start and the
gateway's included), its wall seconds and the CPU-seconds of the whole process tree
(``bench/run_cost.py``: this process, the driver JVM, its Python workers, the gateway). The
batch's reports give the sketch days rebuilt, the tables compacted and the seconds of each
step. Prints a table::

    .venv/bin/python bench/erasure_batch.py [--requests 1000] [--days 3] \
        [--events-per-day 5000] [--seed 7] [--work-dir DIR]
"""

from __future__ import annotations

import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from erasure import (  # noqa: E402  (bench/erasure.py)
    QUIET,
    built_lake,
    lake_arguments,
    use_lake_environment,
)
from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)
from run_cost import tree_cpu_seconds  # noqa: E402  (bench/run_cost.py)


def held_in_files(folder: Path, needles: set[bytes]) -> set[bytes]:
    """The ``needles`` (8 bytes or longer) found in any file under ``folder``, as raw bytes:
    every 8-byte window of a file is looked up among the needles' first 8 bytes by binary
    search (numpy), and only those candidates are compared whole, so thousands of needles cost a few
    passes over the files instead of one each."""
    import numpy as np

    by_prefix: dict[bytes, list[bytes]] = {}
    for needle in needles:
        by_prefix.setdefault(needle[:8], []).append(needle)
    prefixes = np.sort(np.frombuffer(b"".join(by_prefix), dtype="<u8"))
    found: set[bytes] = set()
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        data = path.read_bytes()
        for offset in range(min(8, max(0, len(data) - 7))):
            words = np.frombuffer(data, dtype="<u8", count=(len(data) - offset) // 8, offset=offset)
            at = np.minimum(np.searchsorted(prefixes, words), len(prefixes) - 1)
            for index in np.flatnonzero(prefixes[at] == words):
                start = offset + 8 * int(index)
                for needle in by_prefix[data[start : start + 8]]:
                    if data.startswith(needle, start):
                        found.add(needle)
    return found


def forgotten_bytes(storage, devices: list[str]) -> set[bytes]:
    """Each forgotten person's ids (UTF-8, as stored) and profiles' sketch hashes (8 bytes)."""
    from profile_store.erasure.requests import GivenId
    from profile_store.erasure.resolution import IdentityGraph
    from profile_store.erasure.sketch_retention import id_hashes

    graph = IdentityGraph.load(storage)
    needles: set[bytes] = set()
    for device in devices:
        person = graph.resolve([GivenId(device)])
        needles |= {value.encode() for value in person.suppressed_ids if len(value) >= 8}
        needles |= id_hashes(person.profiles)
    return needles


def pick_persons(storage, count: int, seed: int) -> list[tuple[str, int]]:
    """``count`` persons sharing no profile, each as (a device id of theirs, its profiles), in
    a seeded order of the devices that sent events."""
    import pyarrow.parquet as pq

    from profile_store.erasure.requests import ErasureRefused, GivenId
    from profile_store.erasure.resolution import IdentityGraph

    graph = IdentityGraph.load(storage)
    users = pq.read_table(Path(storage.root) / "events", columns=["user_id"])
    devices = sorted(set(users.column("user_id").to_pylist()))
    random.Random(seed).shuffle(devices)
    taken: set[str] = set()
    picked = []
    for device in devices:
        if device in taken:
            continue
        try:
            person = graph.resolve([GivenId(device)])
        except ErasureRefused:
            continue
        if person.profiles & taken:
            continue
        taken |= person.profiles
        picked.append((device, len(person.profiles)))
        if len(picked) == count:
            return picked
    raise SystemExit(f"the lake has {len(picked)} distinct persons, fewer than {count}")


def main() -> int:
    parser = lake_arguments(__doc__.splitlines()[0], 3, 5_000, "/tmp/bench-erasure-batch")
    parser.add_argument("--requests", type=int, default=1_000)
    args = parser.parse_args()
    use_lake_environment()
    from dagster import materialize

    from profile_assets.erasure_assets import erasure
    from profile_store.erasure.forget import forget
    from profile_store.erasure.requests import GivenId
    from profile_store.hbase.pool import table_opener
    from profile_store.profiles.table import PROFILE_TABLE

    resources, instance = built_lake(args.work_dir, args.days, args.events_per_day, args.seed)
    hbase_dir = args.work_dir / "hbase"

    hbase = resources["hbase"]
    storage = resources["lake"].storage()
    started = time.perf_counter()
    persons = pick_persons(storage, args.requests, args.seed)
    needles = forgotten_bytes(storage, [device for device, _ in persons])
    held_before = held_in_files(hbase_dir, needles)
    opener = table_opener(hbase.pool(), PROFILE_TABLE)
    for device, _ in persons:
        forget(storage, opener, [GivenId(device)])
    recorded = time.perf_counter() - started
    hbase.close()  # the erasure run starts its own gateway over the same store
    print(
        f"recorded {len(persons):,} requests ({sum(n for _, n in persons):,} profiles) in "
        f"{recorded:.0f} s (not timed)",
        flush=True,
    )

    cpu_before = tree_cpu_seconds()
    started = time.perf_counter()
    result = materialize([erasure], resources=resources, instance=instance, run_config=QUIET)
    wall = time.perf_counter() - started
    hbase.close()
    cpu = tree_cpu_seconds() - cpu_before
    assert result.success
    reports = next(
        m.metadata["reports"].value
        for m in result.asset_materializations_for_node("erasure")
        if m.asset_key.to_user_string() == "erasure"
    )
    assert len(reports) == len(persons), (len(reports), len(persons))
    batch = reports[0]["batch"]
    assert {r["batch"]["batch_id"] for r in reports} == {batch["batch_id"]}
    held_after = held_in_files(hbase_dir, needles)

    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"\nmachine: {machine()}; {load}")
    print(f"lake: {args.days} days x {args.events_per_day:,} events (seed {args.seed})")
    print("\n| figure | value |")
    print("| --- | ---: |")
    print(f"| requests carried out (one batch) | {len(reports):,} |")
    print(f"| wall seconds of the run (Spark and gateway start included) | {wall:.1f} |")
    print(f"| CPU-seconds of the process tree | {cpu:.1f} |")
    print(f"| wall seconds per request | {wall / len(reports):.3f} |")
    print(f"| sketch days rebuilt | {len(batch['sketch_days_rebuilt'])} |")
    tables = batch["hbase_major_compaction"]["tables"]
    print(f"| major compactions | {len(tables)} ({', '.join(tables)}) |")
    print(f"| lake partitions rewritten | {len(batch['partitions_rewritten'])} |")
    print(f"| lake rows removed | {sum(batch['rows_removed'].values()):,} |")
    print(
        f"| sketch rows searched (once) / retaining a hash | {batch['sketch_rows_checked']:,} / "
        f"{batch['sketch_rows_retaining']} |"
    )
    print(
        f"| forgotten ids and hashes in the gateway's files: before / after | "
        f"{len(held_before):,} / {len(held_after):,} of {len(needles):,} |"
    )
    print(
        "\nseconds by step: "
        + ", ".join(f"{step} {seconds}" for step, seconds in batch["seconds_by_step"].items())
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
