"""Schemaless ``event_attributes``: one JSON object per event, built per (app, event type).

Each attribute is present with its own probability, so no two events need share a schema.
Values are produced already JSON-encoded (quoted, escaped) and then assembled into objects
with pyarrow string kernels, one (app, event type) group at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profile_store.generator import catalog
from profile_store.generator.arrow_strings import (
    int_strings,
    json_literal,
    json_literals,
    json_object,
    quoted,
    take,
    uint64_hex,
    uuid_strings,
)

_MAX_QUERY_WORDS = 4
_CONTENT_IDS = 60_000


@dataclass(frozen=True)
class GroupContext:
    """What a value generator may depend on for the events of one group."""

    rng: np.random.Generator
    event_ms: np.ndarray
    device: np.ndarray
    seed: int

    @property
    def size(self) -> int:
        return len(self.event_ms)


def event_attributes(
    group: np.ndarray,
    groups: list[tuple[int, str]],
    event_ms: np.ndarray,
    device: np.ndarray,
    rng: np.random.Generator,
    seed: int,
) -> pa.StringArray:
    """JSON attribute objects for every event, given each event's (app, event type) group."""
    indices, objects = [], []
    for group_id, (app_index, event_type) in enumerate(groups):
        rows = np.flatnonzero(group == group_id)
        if len(rows) == 0:
            continue
        context = GroupContext(rng, event_ms[rows], device[rows], seed)
        specs = catalog.APPS[app_index].attributes.get(event_type, ())
        indices.append(rows)
        objects.append(_group_objects(specs, context))
    if not indices:
        return pa.array([], type=pa.string())
    order = np.argsort(np.concatenate(indices), kind="stable")
    return take(pa.concat_arrays(objects), order)


def _group_objects(specs: tuple[catalog.AttributeSpec, ...], context: GroupContext) -> pa.Array:
    if not specs:
        return pa.array(["{}"] * context.size, type=pa.string())
    pairs = []
    for spec in specs:
        present = pa.array(context.rng.random(context.size) < spec.presence)
        values = _generate(spec.generator, context)
        pair = pc.binary_join_element_wise(json_literal(spec.name) + ":", values, "")
        pairs.append(pc.if_else(present, pair, pa.scalar(None, pa.string())))
    return json_object(pairs)


def _generate(generator: str, context: GroupContext) -> pa.Array:
    if generator in catalog.VOCABULARIES:
        return _vocabulary_values(generator, context)
    return _NOISY[generator](context)


@cache
def _encoded_vocabulary(name: str) -> tuple[pa.StringArray, np.ndarray]:
    values = catalog.VOCABULARIES[name]
    skew = catalog.VOCABULARY_SKEW.get(name, catalog.DEFAULT_SKEW)
    weights = 1.0 / np.arange(1, len(values) + 1) ** skew
    return json_literals(list(values)), weights / weights.sum()


def _vocabulary_values(name: str, context: GroupContext) -> pa.Array:
    """Low-cardinality values with Zipf-like frequencies (the first values dominate)."""
    encoded, probabilities = _encoded_vocabulary(name)
    return take(encoded, context.rng.choice(len(encoded), size=context.size, p=probabilities))


def _ts_ms(context: GroupContext) -> pa.Array:
    """Client clock in epoch milliseconds: close to, but not exactly, the event time."""
    skew = context.rng.integers(-3_000, 500, context.size)
    return quoted(int_strings(context.event_ms + skew))


def _order_id(context: GroupContext) -> pa.Array:
    return quoted(uuid_strings(context.rng, context.size))


def _price(context: GroupContext) -> pa.Array:
    """Prices with cents, log-normally spread around 25.00."""
    cents = np.clip(context.rng.lognormal(np.log(2_500), 1.0, context.size), 99, 999_999)
    cents = cents.astype(np.int64)
    return quoted(
        pc.binary_join_element_wise(
            int_strings(cents // 100), int_strings(cents % 100, width=2), "."
        )
    )


@cache
def _encoded_words() -> tuple[pa.StringArray, np.ndarray]:
    # JSON escaping distributes over concatenation, so escaped words join into escaped text.
    words = [json_literal(word)[1:-1] for word in catalog.SEARCH_WORDS]
    weights = 1.0 / np.arange(1, len(words) + 1) ** 0.7
    return pa.array(words, type=pa.string()), weights / weights.sum()


def _search_query(context: GroupContext) -> pa.Array:
    """Free text of one to four words, with quotes, backslashes, tabs and non-ASCII."""
    words, probabilities = _encoded_words()
    n = context.size
    count = context.rng.integers(1, _MAX_QUERY_WORDS + 1, n)
    columns = []
    for position in range(_MAX_QUERY_WORDS):
        picked = take(words, context.rng.choice(len(words), size=n, p=probabilities))
        if position:
            picked = pc.if_else(pa.array(count > position), picked, pa.scalar(None, pa.string()))
        columns.append(picked)
    return quoted(pc.binary_join_element_wise(*columns, " ", null_handling="skip"))


def _session_id(context: GroupContext) -> pa.Array:
    """Stable per device and four-hour window of the day, like an SDK session id."""
    window = (context.event_ms // 14_400_000).astype(np.uint64)
    key = context.device.astype(np.uint64) * np.uint64(1_000_003) + window
    return quoted(uint64_hex(_mix64(key ^ np.uint64(context.seed & 0xFFFFFFFF))))


def _content_id(context: GroupContext) -> pa.Array:
    """Article or offer ids: a long catalogue with a popular head."""
    ids = 100_000 + (context.rng.zipf(1.3, context.size) % _CONTENT_IDS)
    return quoted(int_strings(ids))


def _score(context: GroupContext) -> pa.Array:
    return quoted(int_strings(context.rng.integers(0, 250_000, context.size)))


def _mix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer: spreads sequential keys over 64 bits."""
    z = values + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


_NOISY: dict[str, Callable[[GroupContext], pa.Array]] = {
    "ts_ms": _ts_ms,
    "order_id": _order_id,
    "price": _price,
    "search_query": _search_query,
    "session_id": _session_id,
    "content_id": _content_id,
    "score": _score,
}
