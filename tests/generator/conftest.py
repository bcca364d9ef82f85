"""A small generated lake shared by the generator tests (generated once per session)."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from profile_store.generator.lake import GenerationSummary, generate_lake


@dataclass(frozen=True)
class Lake:
    """The generated directory, its summary and its raw lines per day."""

    root: Path
    summary: GenerationSummary
    days: int
    events_per_day: int
    events_per_part: int
    malformed_share: float
    lines: dict[str, list[tuple[str, str]]]  # "YYYY-MM-DD" -> [(part file name, raw line)]

    def records(self, day: str) -> list[dict]:
        return [json.loads(line) for _, line in self.lines[day]]

    def ground_truth(self, name: str) -> pq.Table:
        return pq.read_table(self.root / "ground_truth" / name)

    def malformed_kinds(self) -> dict[str, str]:
        table = self.ground_truth("malformed.parquet")
        return dict(zip(table["event_id"].to_pylist(), table["kind"].to_pylist(), strict=True))

    def well_formed(self, day: str) -> list[dict]:
        malformed = self.malformed_kinds()
        return [record for record in self.records(day) if record["event_id"] not in malformed]


def read_lines(day_dir: Path) -> list[tuple[str, str]]:
    lines = []
    for part in sorted(day_dir.glob("part-*.jsonl.gz")):
        with gzip.open(part, "rt", encoding="utf-8") as handle:
            lines.extend((part.name, line.rstrip("\n")) for line in handle)
    return lines


@pytest.fixture(scope="session")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Lake:
    root = tmp_path_factory.mktemp("lake")
    days, events_per_day, events_per_part, share = 3, 8_000, 2_000, 0.005
    summary = generate_lake(
        root,
        days,
        events_per_day,
        seed=11,
        start_date=date(2026, 11, 1),
        malformed_share=share,
        events_per_part=events_per_part,
    )
    lines = {
        day_dir.name.removeprefix("date="): read_lines(day_dir)
        for day_dir in sorted((root / "landing").iterdir())
    }
    return Lake(root, summary, days, events_per_day, events_per_part, share, lines)
