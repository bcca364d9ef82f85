"""Generated write sequences, then every kind of read, on the gateway and on Apache HBase.

Writes carry explicit timestamps (small numbers), so the outcome does not depend on which
millisecond each server's clock was at; counters use server time on both (normalized). Each
example writes under its own row prefix of one table per family layout, so no table is created
per example. Bounded and derandomized: the same examples run in CI on every machine.
"""

from __future__ import annotations

import itertools

import pytest
from differential import Differential
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

LAYOUTS = {
    "versions-3-and-1": {"cf": {"max_versions": 3}, "other": {"max_versions": 1}},
    "versions-1-and-2": {"cf": {"max_versions": 1}, "other": {"max_versions": 2}},
}
ROWS = [b"a", b"ab", b"b", b"c"]
COLUMNS = [b"cf:x", b"cf:y", b"other:z", b"cf:"]
TIMESTAMPS = st.integers(min_value=1, max_value=8)  # few values: same-timestamp writes are common
VALUES = st.binary(min_size=0, max_size=3)
SETTINGS = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
_prefixes = itertools.count(1)

put = st.tuples(
    st.just("put"),
    st.sampled_from(ROWS),
    st.dictionaries(st.sampled_from(COLUMNS), VALUES, min_size=1, max_size=3),
    TIMESTAMPS,
)
delete = st.tuples(
    st.just("delete"),
    st.sampled_from(ROWS),
    st.one_of(
        st.none(),
        st.lists(st.sampled_from([*COLUMNS, b"cf", b"other"]), min_size=1, max_size=2),
    ),
    st.one_of(st.none(), TIMESTAMPS),
)
batch = st.tuples(
    st.just("batch"),
    st.lists(st.one_of(put, delete), min_size=1, max_size=4),
    TIMESTAMPS,
)
counter = st.tuples(
    st.just("counter"), st.sampled_from(ROWS), st.integers(min_value=-3, max_value=5)
)
OPERATIONS = st.lists(st.one_of(put, put, delete, batch, counter), min_size=2, max_size=12)


def apply(table, prefix: bytes, operation: tuple) -> object:
    kind = operation[0]
    if kind == "put":
        _, row, data, ts = operation
        return table.put(prefix + row, data, timestamp=ts)
    if kind == "delete":
        _, row, columns, ts = operation
        return table.delete(prefix + row, columns=columns, timestamp=ts)
    if kind == "counter":
        _, row, amount = operation
        return table.counter_inc(prefix + row, b"cf:n", amount)
    _, operations, ts = operation
    with table.batch(timestamp=ts) as writes:
        for inner in operations:
            if inner[0] == "put":
                writes.put(prefix + inner[1], inner[2])
            else:
                writes.delete(prefix + inner[1], columns=inner[2])
    return None


def reads(name: bytes, prefix: bytes) -> dict[str, object]:
    """Every read under ``prefix``, each a function of a connection."""
    keys = [prefix + row for row in ROWS]
    return {
        "scan": lambda c: c.table(name).scan(row_prefix=prefix, include_timestamp=True),
        "scan reversed": lambda c: c.table(name).scan(row_prefix=prefix, reverse=True),
        "scan range": lambda c: c.table(name).scan(row_start=keys[1], row_stop=keys[3]),
        "scan columns": lambda c: c.table(name).scan(
            row_prefix=prefix, columns=[b"cf:x", b"other"], include_timestamp=True
        ),
        "scan before ts 5": lambda c: c.table(name).scan(row_prefix=prefix, timestamp=5),
        "scan limit": lambda c: c.table(name).scan(row_prefix=prefix, limit=2, batch_size=1),
        "scan sorted": lambda c: c.table(name).scan(row_prefix=prefix, sorted_columns=True),
        "scan batching": lambda c: c.table(name).scan(row_prefix=prefix, scan_batching=1),
        "rows": lambda c: c.table(name).rows(keys, include_timestamp=True),
        "rows columns": lambda c: c.table(name).rows(keys, columns=[b"cf"]),
        "row before ts 4": lambda c: [
            c.table(name).row(key, timestamp=4, include_timestamp=True) for key in keys
        ],
        "cells": lambda c: [
            c.table(name).cells(key, column, versions=3, include_timestamp=True)
            for key in keys
            for column in (b"cf:x", b"cf:y", b"other:z", b"cf:", b"cf:n")
        ],
        "cells before ts 6": lambda c: [
            c.table(name).cells(key, b"cf:x", versions=2, timestamp=6) for key in keys
        ],
    }


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def layout_table(request: pytest.FixtureRequest, conformance_gateway, apache_hbase):
    differential = Differential(
        conformance_gateway.connection_kwargs(), apache_hbase.connection_kwargs()
    )
    name = differential.create_table(LAYOUTS[request.param])
    yield differential, name
    differential.close()


@SETTINGS
@given(operations=OPERATIONS)
def test_generated_writes_read_back_the_same_on_both(layout_table, operations) -> None:
    pair, name = layout_table
    prefix = b"%04d/" % next(_prefixes)
    for operation in operations:
        pair.same(lambda c, op=operation: apply(c.table(name), prefix, op), f"write {operation}")
    for what, read in reads(name, prefix).items():
        pair.same(read, f"{what} after {operations}")
