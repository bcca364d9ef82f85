"""A batch's events folded into the lineage cells they belong to, over the batch's columns.

Per lineage (origin, day, partition), only the events past the offset its cell already holds
count, so a replayed batch (after a crash, a rebalance, a broker restart) changes nothing it
already wrote. Segments are the segment rules applied as the daily run applies them (expiry:
the last matching event plus the rule's TTL, the later expiry winning); counters decay by the
half-life and add, as ``profiles/counters.py`` merges them. Both merges are commutative and
associative, so the order of the events, the batch boundaries and the partitioning never change
a lineage's state (up to floating-point rounding of the counters).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from profile_store.profiles.live_cells import EMPTY_THROUGH, Lineage, LiveCell, merge_counter
from profile_store.profiles.segment_rules import SegmentRule
from profile_store.realtime.event_days import day_text
from profile_store.realtime.live_events import LiveEvents


def _codes(values: Sequence[str] | np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Dense integer codes of strings, and the strings of the codes."""
    encoded = pa.array(values, pa.string()).dictionary_encode()
    return encoded.indices.to_numpy(zero_copy_only=False).astype(
        np.int64
    ), encoded.dictionary.to_pylist()


def event_lineages(events: LiveEvents) -> tuple[list[Lineage], np.ndarray]:
    """The distinct lineages of the events, and each event's index among them."""
    if not len(events):
        return [], np.zeros(0, dtype=np.int64)
    origin_codes, origins = _codes(events.origins)
    stacked = np.stack([origin_codes, events.days, events.partitions.astype(np.int64)], axis=1)
    unique, inverse = np.unique(stacked, axis=0, return_inverse=True)
    lineages = [
        Lineage(day_text(int(day)), int(partition), origins[int(origin)])
        for origin, day, partition in unique
    ]
    return lineages, inverse.reshape(-1)


def _rule_matches(events: LiveEvents, rule: SegmentRule) -> np.ndarray:
    matches = events.event_types == rule.event_type
    if rule.app_id is not None:
        matches &= events.app_ids == rule.app_id
    for name, value in rule.attributes.items():
        matches &= events.attributes[name] == value
    return matches


def lineage_updates(
    events: LiveEvents,
    bases: Mapping[Lineage, LiveCell],
    rules: Sequence[SegmentRule],
    half_life_ms: int,
    versions: Mapping[int, int],
) -> dict[Lineage, LiveCell]:
    """The new cell of every lineage that received an event it did not hold yet.

    ``bases``: each lineage's current cell (absent: none yet); ``versions``: the HBase
    timestamp of this batch's cells per partition (its last offset there, plus one).
    """
    lineages, group = event_lineages(events)
    if not lineages:
        return {}
    held = np.array(
        [bases[line].through if line in bases else EMPTY_THROUGH for line in lineages],
        dtype=np.int64,
    )
    applied = events.offsets > held[group]
    if not applied.any():
        return {}
    group = group[applied]
    offsets = events.offsets[applied]
    times = events.event_ms[applied]
    count = len(lineages)
    through = held.copy()
    np.maximum.at(through, group, offsets)

    type_codes, type_names = _codes(events.event_types[applied])
    pairs, pair_of = np.unique(np.stack([group, type_codes], axis=1), axis=0, return_inverse=True)
    pair_of = pair_of.reshape(-1)
    last = np.full(len(pairs), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(last, pair_of, times)
    weights = np.exp2((times - last[pair_of]) / float(half_life_ms))
    sums = np.zeros(len(pairs), dtype=np.float64)
    np.add.at(sums, pair_of, weights)

    expiries = np.full((count, len(rules)), -1, dtype=np.int64)
    kept = _kept_events(events, applied)
    for column, rule in enumerate(rules):
        matches = _rule_matches(kept, rule)
        if matches.any():
            np.maximum.at(expiries[:, column], group[matches], times[matches] + rule.ttl_ms)

    added: dict[int, dict[str, tuple[float, int]]] = {}
    for (line, code), value, when in zip(pairs.tolist(), sums.tolist(), last.tolist(), strict=True):
        added.setdefault(line, {})[type_names[code]] = (value, when)
    hits: dict[int, dict[str, int]] = {}
    for line, column in zip(*(a.tolist() for a in np.nonzero(expiries >= 0)), strict=True):
        hits.setdefault(line, {})[rules[column].segment] = int(expiries[line, column])
    updates: dict[Lineage, LiveCell] = {}
    for index in np.unique(group).tolist():
        lineage = lineages[index]
        base = bases.get(lineage)
        segments = dict(base.segments) if base else {}
        for segment, expiry in hits.get(index, {}).items():
            segments[segment] = max(expiry, segments.get(segment, expiry))
        counters = dict(base.counters) if base else {}
        for event, counter in added[index].items():
            # A base kept with another half-life (the setting changed) is its value at its last
            # event, the same under any half-life; it decays with the current one from there.
            counters[event] = merge_counter(counters.get(event), counter, half_life_ms)
        updates[lineage] = LiveCell(
            through=int(through[index]),
            version=versions[lineage.partition],
            half_life_ms=half_life_ms,
            segments=segments,
            counters=counters,
        )
    return updates


def _kept_events(events: LiveEvents, applied: np.ndarray) -> LiveEvents:
    return LiveEvents(
        partitions=events.partitions[applied],
        offsets=events.offsets[applied],
        origins=[],
        event_types=events.event_types[applied],
        app_ids=events.app_ids[applied],
        event_ms=events.event_ms[applied],
        days=events.days[applied],
        attributes={name: column[applied] for name, column in events.attributes.items()},
        keys=[],
    )
