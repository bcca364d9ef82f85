"""Benchmark: what oversized landing lines cost the quarantine, cut to a prefix or kept whole.

Fixed seed. Writes one landing day of ``--lines`` lines, each with ``--attributes`` attribute
values of ``--characters`` random hex characters (text that does not compress, as a hostile
sender's would not), ingests it once with the default bound (``max_raw_bytes``, 4 KiB) and once
with a bound above every line (each line kept whole, as before the bound existed), and prints
the landing bytes, the quarantine's Parquet bytes and the ingest seconds of each::

    python bench/oversized_lines.py [--lines 31] [--attributes 500] [--characters 10000]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from pyspark.sql import SparkSession

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from profile_store.events.ingest import ingest_day  # noqa: E402
from profile_store.events.rules import MAX_RAW_BYTES, ValidationRules  # noqa: E402
from profile_store.lake.layout import landing_day, quarantine_day  # noqa: E402
from profile_store.lake.storage import LocalLakeStorage  # noqa: E402
from profile_store.spark.session import local_spark_config  # noqa: E402

DAY = date(2026, 11, 1)


def write_day(root: Path, lines: int, attributes: int, characters: int, seed: int) -> int:
    """The landing day; returns the bytes of its lines."""
    rng = random.Random(seed)
    directory = root / landing_day(DAY)
    directory.mkdir(parents=True)
    written = 0
    with gzip.open(directory / "part-00000.jsonl.gz", "wt", compresslevel=1) as out:
        for index in range(lines):
            values = {f"a{i}": rng.randbytes(characters // 2).hex() for i in range(attributes)}
            line = json.dumps(
                {
                    "event_id": f"e{index}",
                    "app_id": "com.example.shop",
                    "user_id": f"u{index}",
                    "id_type": "cookie",
                    "event_time": f"{DAY}T10:00:00Z",
                    "event_type": "view",
                    "event_attributes": values,
                    "alt_ids": {"email_sha256": rng.randbytes(32).hex()},
                }
            )
            out.write(line + "\n")
            written += len(line) + 1
    return written


def ingest(spark: SparkSession, root: Path, max_raw_bytes: int) -> tuple[int, float]:
    """The quarantine's Parquet bytes and the ingest's seconds."""
    storage = LocalLakeStorage(root)
    started = time.perf_counter()
    ingest_day(spark, storage, DAY, ValidationRules(max_raw_bytes=max_raw_bytes))
    seconds = time.perf_counter() - started
    files = (root / quarantine_day(DAY)).glob("*.parquet")
    return sum(f.stat().st_size for f in files), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=31)
    parser.add_argument("--attributes", type=int, default=500)
    parser.add_argument("--characters", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    builder = SparkSession.builder.appName("bench-oversized-lines")
    for key, value in local_spark_config(shuffle_partitions=2).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as work:
        root = Path(work)
        line_bytes = write_day(root, args.lines, args.attributes, args.characters, args.seed)
        print(f"{args.lines} lines of {args.attributes} x {args.characters:,} characters: ")
        print(f"  {line_bytes / 1e6:,.1f} MB of lines")
        ingest(spark, root, 4096)  # warm: Spark's first job pays for its start
        for label, bound in (("prefix (4 KiB)", 4096), ("whole lines", MAX_RAW_BYTES)):
            size, seconds = ingest(spark, root, bound)
            print(f"  quarantine, {label}: {size / 1e3:,.1f} kB of Parquet, ingest {seconds:.1f} s")
    spark.stop()


if __name__ == "__main__":
    main()
