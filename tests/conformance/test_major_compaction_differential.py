"""``majorCompact``: it changes nothing a read returns, and fails alike on both servers.

HBase only queues the compaction and answers at once; the gateway compacts before it answers.
Either way every read afterwards must answer as before it: deleted and overwritten cells, cells
past their TTL and versions beyond ``max_versions`` stay invisible, live cells stay.
"""

from __future__ import annotations

import time

from differential import Differential

FAMILIES = {
    "cf": {"max_versions": 3},
    "one": {"max_versions": 1},
    "ttl": {"max_versions": 2, "time_to_live": 3600},
}
ROWS = [b"r1", b"r2", b"r3", b"r4", b"r5", b"r6"]
COLUMNS = [b"cf:a", b"cf:b", b"one:a", b"ttl:a"]


def write_history(connection, name: bytes) -> None:
    """Versions beyond the limit, overwrites, column/family/row deletes, an expired cell."""
    table = connection.table(name)
    for ts in range(1, 6):
        table.put(b"r1", {b"cf:a": b"v%d" % ts, b"one:a": b"o%d" % ts}, timestamp=ts)
    table.put(b"r2", {b"cf:a": b"x", b"cf:b": b"y"}, timestamp=10)
    table.delete(b"r2", columns=[b"cf:a"], timestamp=15)
    table.put(b"r3", {b"cf:a": b"gone", b"one:a": b"gone"}, timestamp=20)
    table.delete(b"r3")
    table.put(b"r4", {b"cf:a": b"before"}, timestamp=5)
    table.delete(b"r4", columns=[b"cf"], timestamp=7)
    table.put(b"r4", {b"cf:a": b"masked"}, timestamp=6)
    table.put(b"r4", {b"cf:a": b"after"}, timestamp=8)
    table.put(b"r5", {b"ttl:a": b"expired"}, timestamp=1000)
    table.put(b"r5", {b"ttl:a": b"live"})
    with table.batch() as batch:
        for i in range(50):
            batch.put(b"r6-%02d" % i, {b"cf:a": b"%d" % i, b"one:a": b"first"}, timestamp=30)
            batch.put(b"r6-%02d" % i, {b"one:a": b"second"}, timestamp=31)
        batch.delete(b"r6-07")


def reads(connection, name: bytes) -> dict:
    """Every way the suite reads the table: scans, rows at a time, each column's versions."""
    table = connection.table(name)
    return {
        "scan": list(table.scan(include_timestamp=True)),
        "scan_before_9": list(table.scan(timestamp=9, include_timestamp=True)),
        "rows": table.rows(ROWS, include_timestamp=True),
        "cells": {
            (row, column): table.cells(row, column, versions=10, include_timestamp=True)
            for row in ROWS
            for column in COLUMNS
        },
    }


def test_reads_after_a_major_compaction_answer_as_before_it(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: write_history(c, name))
    before = pair.same(lambda c: reads(c, name), "reads before majorCompact")
    pair.same(lambda c: c.compact_table(name, major=True))
    time.sleep(2)  # HBase compacts in the background; its answers must not change meanwhile
    after = pair.same(lambda c: reads(c, name), "reads after majorCompact")
    assert after == before


def test_a_major_compaction_by_region_name_is_accepted_on_both(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: write_history(c, name))
    pair.same(lambda c: c.client.majorCompact(c.table(name).regions()[0]["name"]))
    pair.same(lambda c: reads(c, name))


def test_a_major_compaction_of_a_missing_table_fails_alike(pair: Differential) -> None:
    pair.same(lambda c: c.compact_table(b"conformance_no_such_table", major=True))


def test_a_major_compaction_of_a_disabled_table_answers_alike(pair: Differential) -> None:
    name = pair.create_table(FAMILIES)
    pair.same(lambda c: write_history(c, name))
    pair.same(lambda c: c.disable_table(name))
    pair.same(lambda c: c.compact_table(name, major=True))
    pair.same(lambda c: c.enable_table(name))
    pair.same(lambda c: reads(c, name))
