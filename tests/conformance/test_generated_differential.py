"""Generated write sequences, then every kind of read, on the gateway and on Apache HBase.

Each example writes under its own row prefix of one table per family layout, so no table is
created per example. Bounded and derandomized: the same examples run in CI on every machine.

* ``test_generated_writes_...``: writes carry explicit small timestamps, so the outcome does not
  depend on which millisecond each server's clock was at; counters use server time on both
  (normalized).
* ``test_mixed_writes_of_one_millisecond_...``: puts, counter sets, deletes of every form and
  increments of the same cells back to back, sent without waiting and alternating over two
  connections per server (on the gateway: two worker processes, every batch through its
  pending log). HBase stamps a write without a timestamp with its region server's clock and
  from then on treats it exactly as one written with that timestamp; an increment writes at the
  later of the clock and its cell's newest version + 1. Two servers' clocks cannot be made to
  tick alike from outside, so a virtual clock stands in for them: every put, counter set and
  delete carries the timestamp ``F + k``, with runs of writes sharing one ``k`` (one
  millisecond), and ``F`` is far ahead of the real clock, so an increment of such a cell writes
  at newest + 1 just as within that millisecond. Increments of cells with nothing newer than
  the real clock run on it (their timestamps compare as server time); a few writes land at
  Long.MAX_VALUE - 1, where an increment reaches the last timestamp there is. Timestamps are
  compared exactly, ``F + k`` as ``("F", k)``.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from typing import Any

import happybase
import pytest
from differential import Differential, normalized
from Hbase_thrift import Mutation
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


def reads(
    name: bytes, prefix: bytes, before: tuple[int, int, int] = (5, 4, 6)
) -> dict[str, Callable[[happybase.Connection], Any]]:
    """Every read under ``prefix``, each a function of a connection; ``before``: the timestamps
    the scan, the row gets and the cells reads are made before."""
    keys = [prefix + row for row in ROWS]
    scan_before, row_before, cells_before = before
    return {
        "scan": lambda c: c.table(name).scan(row_prefix=prefix, include_timestamp=True),
        "scan reversed": lambda c: c.table(name).scan(row_prefix=prefix, reverse=True),
        "scan range": lambda c: c.table(name).scan(row_start=keys[1], row_stop=keys[3]),
        "scan columns": lambda c: c.table(name).scan(
            row_prefix=prefix, columns=[b"cf:x", b"other"], include_timestamp=True
        ),
        "scan one column": lambda c: c.table(name).scan(
            row_prefix=prefix, columns=[b"cf:n"], include_timestamp=True
        ),
        f"scan before ts {scan_before}": lambda c: c.table(name).scan(
            row_prefix=prefix, timestamp=scan_before, include_timestamp=True
        ),
        "scan limit": lambda c: c.table(name).scan(row_prefix=prefix, limit=2, batch_size=1),
        "scan sorted": lambda c: c.table(name).scan(row_prefix=prefix, sorted_columns=True),
        "scan batching": lambda c: c.table(name).scan(
            row_prefix=prefix, scan_batching=1, include_timestamp=True
        ),
        "rows": lambda c: c.table(name).rows(keys, include_timestamp=True),
        "rows columns": lambda c: c.table(name).rows(keys, columns=[b"cf"]),
        "rows named columns": lambda c: c.table(name).rows(
            keys, columns=[b"cf:n", b"other:n"], include_timestamp=True
        ),
        f"row before ts {row_before}": lambda c: [
            c.table(name).row(key, timestamp=row_before, include_timestamp=True) for key in keys
        ],
        "cells": lambda c: [
            c.table(name).cells(key, column, versions=3, include_timestamp=True)
            for key in keys
            for column in (b"cf:x", b"cf:y", b"other:z", b"cf:", b"cf:n", b"other:n", b"cf")
        ],
        f"cells before ts {cells_before}": lambda c: [
            c.table(name).cells(key, column, versions=2, timestamp=cells_before)
            for key in keys
            for column in (b"cf:x", b"cf:n")
        ],
        "get": lambda c: [
            [(cell.value, cell.timestamp) for cell in c.client.get(name, key, b"cf:n", {})]
            for key in keys
        ],
    }


@pytest.fixture(scope="module", params=sorted(LAYOUTS))
def layout_table(request: pytest.FixtureRequest, conformance_gateway, apache_hbase):
    differential = Differential(
        conformance_gateway.connection_kwargs(), apache_hbase.connection_kwargs(), second=True
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


F = 4_000_000_000_000  # the virtual clock's start (in 2096), ahead of every server clock
LAST_BUT_ONE = 2**63 - 2  # Long.MAX_VALUE - 1: an increment of it writes at Long.MAX_VALUE
MIXED_ROWS = [b"a", b"b", b"c"]
MIXED_COLUMNS = [b"cf:x", b"cf:n", b"cf:", b"other:n"]
DELETABLE = [*MIXED_COLUMNS, b"cf", b"other"]


def counter(n: int) -> bytes:
    return struct.pack(">q", n)


mixed_rows = st.sampled_from(MIXED_ROWS)
mixed_columns = st.sampled_from(MIXED_COLUMNS)
mixed_values = st.sampled_from([b"", b"v", b"w", counter(0), counter(7)])
amounts = st.integers(min_value=-2, max_value=5)
MIXED = st.one_of(
    st.tuples(
        st.just("put"),
        mixed_rows,
        st.dictionaries(mixed_columns, mixed_values, min_size=1, max_size=2),
    ),
    st.tuples(st.just("counter_set"), mixed_rows, mixed_columns, st.integers(-3, 9)),
    st.tuples(st.just("increment"), mixed_rows, mixed_columns, amounts),
    st.tuples(st.just("increment"), mixed_rows, st.sampled_from([b"cf:n", b"other:n"]), amounts),
    st.tuples(
        st.just("delete"), mixed_rows, st.lists(st.sampled_from(DELETABLE), min_size=1, max_size=2)
    ),
    st.tuples(st.just("deleteAllTs"), mixed_rows, st.sampled_from(DELETABLE)),
    st.tuples(st.just("deleteAllRowTs"), mixed_rows),
    st.tuples(
        st.just("mutateRowTs"),
        mixed_rows,
        st.lists(
            st.one_of(
                st.tuples(st.just(False), mixed_columns, mixed_values),
                st.tuples(st.just(True), st.sampled_from(DELETABLE), st.none()),
            ),
            min_size=1,
            max_size=3,
        ),
    ),
    st.tuples(
        st.just("batch"),
        st.lists(
            st.tuples(mixed_rows, st.sampled_from(["put", "delete"]), mixed_columns, mixed_values),
            min_size=1,
            max_size=4,
        ),
    ),
    st.tuples(st.just("older"), mixed_rows, mixed_columns, mixed_values, st.integers(1, 3)),
    st.tuples(st.just("last_but_one"), mixed_rows, mixed_columns, st.integers(0, 9)),
)
TICKS = st.sampled_from([0, 0, 0, 0, 1, 2])  # how far the virtual clock moves before a write
MIXED_SEQUENCES = st.lists(st.tuples(TICKS, MIXED), min_size=3, max_size=14)
MIXED_SETTINGS = settings(SETTINGS, max_examples=75)


def write_at(
    connection: happybase.Connection, name: bytes, prefix: bytes, ms: int, operation: tuple
) -> Any:
    """One write of a mixed sequence at virtual time ``ms``, as happybase (or its client, for
    the calls happybase does not make) sends it."""
    table, client, kind = connection.table(name), connection.client, operation[0]
    if kind == "batch":
        with table.batch(timestamp=ms) as batch:
            for key, inner_kind, column, value in operation[1]:
                if inner_kind == "put":
                    batch.put(prefix + key, {column: value})
                else:
                    batch.delete(prefix + key, columns=[column])
        return None
    row = prefix + operation[1]
    if kind == "put":
        return table.put(row, operation[2], timestamp=ms)
    if kind == "counter_set":  # happybase's counter_set, at the virtual clock
        return table.put(row, {operation[2]: counter(operation[3])}, timestamp=ms)
    if kind == "increment":
        return table.counter_inc(row, operation[2], operation[3])
    if kind == "delete":
        return table.delete(row, columns=operation[2], timestamp=ms)
    if kind == "deleteAllTs":
        return client.deleteAllTs(name, row, operation[2], ms, {})
    if kind == "deleteAllRowTs":
        return table.delete(row, timestamp=ms)
    if kind == "mutateRowTs":
        mutations = [Mutation(isDelete=d, column=c, value=v) for d, c, v in operation[2]]
        return client.mutateRowTs(name, row, mutations, ms, {})
    if kind == "older":
        return table.put(row, {operation[2]: operation[3]}, timestamp=operation[4])
    return table.put(row, {operation[2]: counter(operation[3])}, timestamp=LAST_BUT_ONE)


def virtual(value: Any, since_ms: int) -> Any:
    """Timestamps of the virtual clock as ``("F", k)``, the last ones as ``("MAX", -k)``,
    server time and the rest as ``differential.normalized`` has them."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= LAST_BUT_ONE - 1_000:
            return ("MAX", value - 2**63 + 1)
        if value >= F - 1_000:
            return ("F", value - F)
    if isinstance(value, dict):
        return {k: virtual(v, since_ms) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(virtual(v, since_ms) for v in value)
    return normalized(value, since_ms)


@MIXED_SETTINGS
@given(sequence=MIXED_SEQUENCES)
def test_mixed_writes_of_one_millisecond_read_back_the_same_on_both(layout_table, sequence) -> None:
    pair, name = layout_table
    prefix = b"%04d/" % next(_prefixes)
    ms = F
    for index, (tick, operation) in enumerate(sequence):
        ms += tick
        pair.same(
            lambda c, ms=ms, op=operation: write_at(c, name, prefix, ms, op),
            f"write {index} at F+{ms - F}: {operation}",
            on_second=index % 2 == 1,
            normalize=virtual,
        )
    middle = F + (ms - F + 1) // 2
    for index, (what, read) in enumerate(reads(name, prefix, (middle, middle, ms + 1)).items()):
        pair.same(read, f"{what} after {sequence}", on_second=index % 2 == 1, normalize=virtual)
