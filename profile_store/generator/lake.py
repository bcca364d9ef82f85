"""``generate_lake``: a deterministic multi-day landing zone plus its ground truth.

Each day draws from its own seeded streams, so the output is byte-identical for the same
arguments, and a day's content does not depend on how many days follow it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.generator import landing, malformed
from profile_store.generator.arrow_strings import take
from profile_store.generator.events import day_events
from profile_store.generator.ground_truth import EmissionTracker, write_ground_truth
from profile_store.generator.identity_noise import NoiseLedger
from profile_store.generator.population import (
    EVENTS_PER_ACTIVE_PERSON,
    build_population,
    cohort_sizes,
)

LANDING_DIR = "landing"
DEFAULT_START_DATE = date(2026, 11, 1)


@dataclass(frozen=True)
class DaySummary:
    """What one day's landing directory holds."""

    date: date
    events: int  # distinct events, malformed included, duplicates excluded
    malformed: int
    malformed_by_kind: dict[str, int]
    duplicates: int
    lines: int  # events + duplicates
    parts: int
    seconds: float


@dataclass(frozen=True)
class GenerationSummary:
    """A generated lake: per-day counts and the size of the simulated population."""

    out_dir: Path
    seed: int
    days: tuple[DaySummary, ...]
    persons: int  # persons in the pool by the last day
    devices: int  # device/cookie ids that appear in the lake (rows of identities.parquet)
    seconds: float

    @property
    def events(self) -> int:
        return sum(day.events for day in self.days)

    @property
    def lines(self) -> int:
        return sum(day.lines for day in self.days)

    @property
    def malformed(self) -> int:
        return sum(day.malformed for day in self.days)

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds else 0.0


def generate_lake(
    out_dir: Path,
    days: int,
    events_per_day: int,
    seed: int,
    start_date: date = DEFAULT_START_DATE,
    malformed_share: float = 0.005,
    *,
    events_per_part: int = landing.EVENTS_PER_PART,
    events_per_person: float = EVENTS_PER_ACTIVE_PERSON,
    on_day: Callable[[DaySummary], None] | None = None,
) -> GenerationSummary:
    """Write ``days`` landing days under ``out_dir/landing`` and ``out_dir/ground_truth``.

    ``events_per_person`` is the mean traffic of a person active on a day: the same events
    spread over more persons (a lower value) give each app and day more users.
    """
    if days < 1 or events_per_day < 1:
        raise ValueError("days and events_per_day must be positive")
    if not 0.0 <= malformed_share <= 1.0:
        raise ValueError("malformed_share must be within [0, 1]")
    if not events_per_person >= 1.0:
        raise ValueError(f"events_per_person must be at least 1, got {events_per_person}")
    started = time.perf_counter()
    out_dir = Path(out_dir)
    population = build_population(seed, cohort_sizes(events_per_day, days, events_per_person))
    tracker = EmissionTracker(population.n_devices)
    ledger = NoiseLedger()
    summaries, malformed_rows = [], []
    for day in range(days):
        day_started = time.perf_counter()
        date_ = start_date + timedelta(days=day)
        events = day_events(population, day, date_, events_per_day, seed, ledger, events_per_person)

        corruption = malformed.plan(
            pc.cast(events["event_time"], pa.int64()).to_numpy(),
            malformed_share,
            np.random.default_rng([seed, malformed.STREAM_MALFORMED, day]),
        )
        kind = corruption.kind
        tracker.record(
            events,
            has_user_id=kind != malformed.KINDS.index("missing_user_id"),
            well_formed=kind == malformed.NOT_MALFORMED,
        )
        duplicates = landing.plan_duplicates(
            kind == malformed.NOT_MALFORMED,
            np.random.default_rng([seed, landing.STREAM_DUPLICATES, day]),
        )
        parts = landing.write_day(
            landing.day_directory(out_dir / LANDING_DIR, date_.isoformat()),
            len(duplicates.order),
            DayLines(events, corruption, duplicates).between,
            events_per_part,
        )
        malformed_rows.append(_malformed_rows(date_, events["event_id"], kind))
        by_kind = np.bincount(kind[kind >= 0], minlength=len(malformed.KINDS))
        summary = DaySummary(
            date=date_,
            events=len(events),
            malformed=int(by_kind.sum()),
            malformed_by_kind=dict(zip(malformed.KINDS, map(int, by_kind), strict=True)),
            duplicates=duplicates.count,
            lines=len(duplicates.order),
            parts=parts,
            seconds=time.perf_counter() - day_started,
        )
        summaries.append(summary)
        if on_day is not None:
            on_day(summary)
        del events, corruption  # before the next day's table is drawn: one day in memory

    write_ground_truth(out_dir, population, tracker, ledger, pa.concat_tables(malformed_rows))
    return GenerationSummary(
        out_dir=out_dir,
        seed=seed,
        days=tuple(summaries),
        persons=population.n_persons,
        devices=int(tracker.emitted.sum()),
        seconds=time.perf_counter() - started,
    )


class DayLines:
    """The text of a day's landing lines, built a part at a time from the event table.

    Lines are built from a contiguous slice of events (corrupted where planned) plus the
    duplicated lines they interleave with, so memory holds one part's lines, not the day's.
    """

    def __init__(
        self, events: pa.Table, corruption: malformed.Corruption, duplicates: landing.Duplicates
    ):
        self.events = events
        self.corruption = corruption
        self.order = duplicates.order
        # Only well-formed rows are duplicated: their copies need no corruption applied.
        self.copies = landing.assemble_lines(landing.json_fragments(events.take(duplicates.source)))

    def between(self, start: int, stop: int) -> pa.StringArray:
        items = self.order[start:stop]
        rows = len(self.events)
        originals = items[items < rows]  # consecutive rows: the day's order is kept
        low = int(originals[0]) if len(originals) else 0
        high = int(originals[-1]) + 1 if len(originals) else 0
        fragments = landing.json_fragments(self.events.slice(low, high - low))
        lines = landing.assemble_lines(self.corruption.apply(fragments, low))
        index = np.where(items < rows, items - low, (high - low) + (items - rows))
        return take(pa.concat_arrays([lines, self.copies]), index)


def _malformed_rows(date_: date, event_id: pa.ChunkedArray, kind: np.ndarray) -> pa.Table:
    """Which event ids of the day were corrupted, and how (for quarantine checks)."""
    rows = np.flatnonzero(kind >= 0)
    return pa.table(
        {
            "date": pa.array(np.full(len(rows), np.datetime64(date_, "D")), type=pa.date32()),
            "event_id": take(event_id.combine_chunks(), rows),
            "kind": take(pa.array(malformed.KINDS, type=pa.string()), kind[rows]),
        }
    )
