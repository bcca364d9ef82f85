"""Generated traffic as Kafka messages: a generated lake's landing lines, keyed as the collector
keys them, for the real-time path's demo, benchmarks and tests."""

from __future__ import annotations

import gzip
import random
from datetime import date
from pathlib import Path

from profile_store.generator.lake import DEFAULT_START_DATE, generate_lake
from profile_store.realtime.event_keys import keyed_lines


def keyed_traffic(
    root: Path,
    days: int,
    events_per_day: int,
    seed: int,
    start_date: date = DEFAULT_START_DATE,
    *,
    interleave_days: bool = False,
) -> list[tuple[bytes, bytes]]:
    """Generate ``days`` into ``root`` and return every landing line (malformed lines and
    duplicate deliveries included) as ``(key, line)``, day after day or, with
    ``interleave_days``, shuffled by ``seed`` as late and early events arrive mixed."""
    generate_lake(root, days, events_per_day, seed, start_date=start_date)
    lines: list[bytes] = []
    for part in sorted((root / "landing").rglob("*.jsonl.gz")):
        lines.extend(gzip.decompress(part.read_bytes()).splitlines())
    if interleave_days:
        random.Random(seed).shuffle(lines)
    return keyed_lines(lines)
