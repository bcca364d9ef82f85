"""The accuracy check's exact side over its window, from the days' leaf counts.

Each day of the window is counted once (``leaf_counts``); the check then reads the runs its
leaves name, so a day costs the events of the new day, not of the 30 it looks back over. The
answers are those ``exact.EventsExactSide`` gives from the events: a leaf the counts cannot
answer (two attributes, or one not kept on a day its pair has events) is answered from the
events.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

import numpy as np
from pyspark.sql import DataFrame, SparkSession

from profile_store.audiences.exact import exact_leaf_users
from profile_store.audiences.leaf_counts import DayLeafCounts, Run, Shape, day_leaf_counts
from profile_store.audiences.query import Leaf, leaf_identity
from profile_store.audiences.query_sampler import CatalogEntry, always_kept, catalog_of
from profile_store.lake.storage import LakeStorage

Slices = list[tuple[np.ndarray, np.ndarray]]  # (user hashes, events) of runs


class CountedWindow:
    """The window's catalog and exact leaf users; ``events`` (the window's, read lazily) only
    for leaves the counts cannot answer."""

    def __init__(
        self, spark: SparkSession, storage: LakeStorage, days: list[date], events: DataFrame
    ) -> None:
        self.spark = spark
        self.storage = storage
        self.events = events
        self.days = [day_leaf_counts(spark, storage, day) for day in days]

    @property
    def days_counted(self) -> list[date]:
        """The days counted from their events when the window was read (none had counts that
        matched their files); the others' counts were read back."""
        return [day.day for day in self.days if day.counted_now]

    def catalog(self, decisions: DataFrame, max_values: int = 5) -> list[CatalogEntry]:
        value_events: dict[tuple[str, str, str], dict[str, int]] = {}
        pair_runs: dict[tuple, list[tuple[DayLeafCounts, Run]]] = {}
        for day in self.days:
            for run in day.runs:
                app, event, attribute, value = run.shape
                if attribute is None:
                    pair_runs.setdefault((app, event), []).append((day, run))
                elif value is not None:
                    values = value_events.setdefault((app, event, attribute), {})
                    values[value] = values.get(value, 0) + run.events
        users = {pair: len(_users(parts, 1)) for pair, parts in self._slices(pair_runs).items()}
        return catalog_of(always_kept(decisions), value_events, users, max_values)

    def leaf_users(self, all_leaves: Iterable[Leaf]) -> dict[tuple, np.ndarray]:
        unique = {leaf_identity(leaf): leaf for leaf in all_leaves}
        counted: dict[tuple, list[tuple[DayLeafCounts, Run]]] = {}
        from_events = []
        for identity, leaf in unique.items():
            runs = self._runs(leaf)
            if runs is None:
                from_events.append(leaf)
            else:
                counted[identity] = runs
        result = {
            identity: _users(parts, unique[identity].min_count or 1)
            for identity, parts in self._slices(counted).items()
        }
        if from_events:
            result.update(exact_leaf_users(self.spark, self.events, from_events))
        return result

    def _runs(self, leaf: Leaf) -> list[tuple[DayLeafCounts, Run]] | None:
        """The runs making the leaf, or None when the counts cannot answer it."""
        if len(leaf.attributes) > 1:
            return None
        ((name, value),) = leaf.attributes.items() if leaf.attributes else ((None, None),)
        shape: Shape = (leaf.app_id, leaf.event_type, name, value)
        start, end = leaf.span
        found = []
        for day in self.days:
            if name is not None and (leaf.app_id, leaf.event_type, name) not in day.kept:
                pair_runs = day.by_shape.get((leaf.app_id, leaf.event_type, None, None), ())
                if any(start <= run.event_date <= end for run in pair_runs):
                    return None  # the pair has events that day, their values uncounted
            found += [
                (day, run) for run in day.by_shape.get(shape, ()) if start <= run.event_date <= end
            ]
        return found

    def _slices(self, runs_of: dict[tuple, list[tuple[DayLeafCounts, Run]]]) -> dict[tuple, Slices]:
        """Per key: the arrays of its runs, each day's file read once for all keys."""
        slices: dict[tuple, Slices] = {key: [] for key in runs_of}
        by_day: dict[date, list[tuple[tuple, Run]]] = {}
        for key, runs in runs_of.items():
            for day, run in runs:
                by_day.setdefault(day.day, []).append((key, run))
        for day in self.days:
            if day.day not in by_day:
                continue
            hashes, events = day.arrays(self.storage)
            for key, run in by_day[day.day]:
                slices[key].append(
                    (hashes[run.start : run.stop].copy(), events[run.start : run.stop].copy())
                )
        return slices


def _users(parts: Slices, min_count: int) -> np.ndarray:
    """The sorted unique hashes of users with at least ``min_count`` events over ``parts``."""
    if not parts:
        return np.empty(0, dtype=np.int64)
    hashes = np.concatenate([h for h, _ in parts])
    if min_count <= 1:
        return np.unique(hashes)
    events = np.concatenate([e for _, e in parts])
    order = np.argsort(hashes, kind="stable")
    hashes, events = hashes[order], events[order]
    firsts = np.flatnonzero(np.r_[True, hashes[1:] != hashes[:-1]])
    return hashes[firsts][np.add.reduceat(events, firsts) >= min_count]
