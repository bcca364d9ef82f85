"""What purging deleted cells costs the gateway: ``secure_delete`` and the purging major compaction.

Fixed seed. On the gateway's store (in this process, no Thrift): a sketch-like table (one
family, ``max_versions`` 1) of ``--rows`` rows of a 16 KiB cell (overflow pages, as theta
sketches are) and a small one, loaded through the pending log; then timed:

1. the day rebuilt: every row rewritten at a later timestamp (the old versions stay until a
   compaction) and 10% of the rows deleted, as an erasure's rebuild does;
2. ``majorCompact`` (``major_compaction.major_compact``), in its two parts: the compaction (old
   versions and markers dropped, free pages returned, the store's WAL truncated), then the
   purge (applied batches out of the pending log, both files rebuilt by ``VACUUM``, both WALs
   truncated).

Each with ``PRAGMA secure_delete = OFF`` (as the gateway runs: the purge's ``VACUUM`` is what
leaves no deleted byte) and ``ON`` (every deleted cell zeroed as it goes, as the gateway ran
until 2026-11-29; Debian's SQLite builds default to it). Prints seconds per phase (median) and
the store's size after::

    .venv/bin/python bench/major_compaction.py [--rows 5000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

from profile_store.hbase_gateway.major_compaction import major_compact  # noqa: E402
from profile_store.hbase_gateway.schema import FamilyDescriptor  # noqa: E402
from profile_store.hbase_gateway.store import Store  # noqa: E402

BATCH = 1_000


def _set_secure_delete(store: Store, on: bool) -> None:
    for conn in [*store._all_connections, store._pending._conn]:
        conn.execute(f"PRAGMA secure_delete = {'ON' if on else 'OFF'}")


def _write(store: Store, rows: list[tuple[bytes, list]]) -> None:
    for start in range(0, len(rows), BATCH):
        store.mutate_batch(b"sketches", rows[start : start + BATCH])
    store.apply_pending()


def run(rows: int, secure: bool, seed: int) -> dict[str, float]:
    rng = random.Random(seed)
    blob = rng.randbytes(16_384)
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder), deferred_batch_mutations=BATCH)
        _set_secure_delete(store, secure)
        store.create_table(b"sketches", [FamilyDescriptor(name=b"s", max_versions=1)])
        keys = [b"app|event|2026-11-%02d|%06d" % (1 + i % 28, i) for i in range(rows)]
        put = [
            (k, [(False, b"s:theta", blob), (False, b"s:n", b"%d" % i)]) for i, k in enumerate(keys)
        ]
        _write(store, put)
        store.checkpoint()
        started = time.perf_counter()
        _write(store, put)
        deleted = [(k, [(True, b"s", None)]) for k in rng.sample(keys, rows // 10)]
        _write(store, deleted)
        rebuilt = time.perf_counter() - started
        started = time.perf_counter()
        store.compact(b"sketches", major=True)  # what major_compact does first
        compacted = time.perf_counter() - started
        started = time.perf_counter()
        major_compact(store, b"sketches")  # again: the compaction finds nothing, the purge runs
        purged = time.perf_counter() - started
        size = sum(p.stat().st_size for p in Path(folder).iterdir() if p.is_file())
        store.close()
    return {
        "rebuild_s": rebuilt,
        "compact_s": compacted,
        "purge_s": purged,
        "store_mib": size / 2**20,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    print(f"{args.rows:,} rows of 16 KiB, rewritten once, 10% deleted; median of {args.repeats}")
    for secure in (False, True):
        runs = [run(args.rows, secure, seed) for seed in range(args.repeats)]
        medians = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        print(
            f"secure_delete {'ON ' if secure else 'OFF'}: rebuild {medians['rebuild_s']:.2f} s, "
            f"compaction {medians['compact_s']:.2f} s, then majorCompact again (the purge) "
            f"{medians['purge_s']:.2f} s; store {medians['store_mib']:.1f} MiB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
