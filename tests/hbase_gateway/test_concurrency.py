"""8 threads x 10,000 mixed operations on overlapping rows through one ConnectionPool.

Every operation is one Thrift call. Shared rows are always written whole (all columns carry the
same tag), so any read that sees two tags in one row has seen a torn write. Each thread also
writes rows only it owns, which must all be there at the end, and counts its increments of
shared counters, whose final values must be the exact sums.
"""

from __future__ import annotations

import random
import struct
import threading

import happybase

THREADS = 8
OPS_PER_THREAD = 10_000
SHARED_ROWS = 50
COLUMNS = [b"cf:c%d" % i for i in range(4)]
COUNTERS = [b"cf:n%d" % i for i in range(5)]


def check_whole(row: bytes, data: dict[bytes, bytes], problems: list[str]) -> None:
    if data and (set(data) != set(COLUMNS) or len(set(data.values())) != 1):
        problems.append(f"torn row {row!r}: {data}")


def worker(
    pool: happybase.ConnectionPool,
    name: str,
    seed: int,
    increments: dict[bytes, int],
    owned: list[bytes],
    problems: list[str],
) -> None:
    rng = random.Random(seed)
    for op in range(OPS_PER_THREAD):
        shared = b"shared%02d" % rng.randrange(SHARED_ROWS)
        kind = rng.random()
        with pool.connection() as connection:
            table = connection.table(name)
            if kind < 0.30:
                tag = b"%d-%d" % (seed, op)
                table.put(shared, dict.fromkeys(COLUMNS, tag))
            elif kind < 0.55:
                check_whole(shared, table.row(shared), problems)
            elif kind < 0.75:
                column = rng.choice(COUNTERS)
                table.counter_inc(b"counters", column)
                increments[column] += 1
            elif kind < 0.85:
                key = b"own-%d-%05d" % (seed, op)
                table.put(key, {b"cf:own": key})
                owned.append(key)
            elif kind < 0.95:
                for row, data in table.scan(row_start=shared, limit=5, batch_size=5):
                    if row.startswith(b"shared"):
                        check_whole(row, data, problems)
            else:
                table.delete(shared)


def test_mixed_concurrent_operations_lose_nothing_and_tear_nothing(gateway, table_name) -> None:
    pool = happybase.ConnectionPool(THREADS, **gateway.connection_kwargs())
    with pool.connection() as connection:
        connection.create_table(table_name, {"cf": {"max_versions": 1}})

    increments = [dict.fromkeys(COUNTERS, 0) for _ in range(THREADS)]
    owned: list[list[bytes]] = [[] for _ in range(THREADS)]
    problems: list[str] = []
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            worker(pool, table_name, index, increments[index], owned[index], problems)
        except BaseException as exc:  # surfaced below; a thread cannot fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert problems == []
    with pool.connection() as connection:
        table = connection.table(table_name)
        counters = table.row(b"counters")
        for column in COUNTERS:
            expected = sum(per_thread[column] for per_thread in increments)
            assert struct.unpack(">q", counters[column])[0] == expected
        every_owned = [key for keys in owned for key in keys]
        stored = dict(table.rows(every_owned))
        assert len(stored) == len(every_owned)
        assert all(stored[key] == {b"cf:own": key} for key in every_owned)
        connection.delete_table(table_name, disable=True)
