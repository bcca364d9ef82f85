"""Benchmark of the real-time profile reads (``ProfileReader``) against the embedded gateway.

Fixed seed. Writes a ``profiles`` table of generated persons (1-5 ids each, 0-20 segments with
expiries from 10 days ago to 60 days ahead, 1-3 decaying counters; star edges to the master; a
hashed-email lookup for one person in five) with the table contract's encoders, then times, from
one client through the same pool the service uses:

* ``segments(id)``: one read of a random profile (1 round trip);
* ``segments(email, key_type)``: an alternate id through its lookup row (2 round trips);
* ``segments_many(25 ids)``: a bidder's batch (1 round trip);
* ``connected(a, b)``: half the pairs two ids of one person, half random ids (1 round trip);
* ``profile(id)``: the whole row, counters decayed (1 round trip).

Prints a markdown table with p50/p99 latency per read and the bars (p99 <= 2 ms for a single
read, <= 5 ms for a batch of 25), plus the load average, since other work on the machine shows
up in the tail. ``--against both`` loads the same table into a standalone Apache HBase
(``profile_store/launchers/apache_hbase.py``) as well, reads the same ids in the same order from
each, and prints both servers' latencies side by side with their ratios. Usage::

    python bench/profile_reads.py [--profiles 100000] [--reads 5000] [--seed 7]
        [--against gateway|apache|both] [--load-only]

``--load-only`` stops after the load and prints how long it took, split into the time inside
``mutateRows`` calls (request encoding, the server's work, the reply) and the rest (the client
building its batches), to iterate on the write path.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import happybase
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)

from profile_store.hbase.pool import hbase_pool, table_opener  # noqa: E402
from profile_store.hbase.settings import HBaseSettings  # noqa: E402
from profile_store.hbase_gateway.process import EmbeddedGateway  # noqa: E402
from profile_store.profiles.reads import ProfileReader  # noqa: E402
from profile_store.profiles.table import (  # noqa: E402
    PROFILE_TABLE,
    ProfileRow,
    edge_cells,
    edge_key,
    ensure_table,
    lookup_cells,
    lookup_key,
    profile_cells,
    profile_key,
)

DAY = 86_400_000
NOW = 1_795_000_000_000
ID_TYPES = ("cookie", "idfa", "gaid")
EVENTS = ("impression", "click", "add_to_cart", "purchase", "page_view")
SEGMENT_CATALOG = [f"seg-{i:03d}" for i in range(300)]
BATCH = 25
WARMUP = 200
BARS_MS = {"single": 2.0, "batch": 5.0}


def generate(rng: np.random.Generator, profiles: int) -> tuple[list[list[str]], list[ProfileRow]]:
    """Persons (ids, master first) and one row per id, until ``profiles`` rows exist."""
    persons: list[list[str]] = []
    rows: list[ProfileRow] = []
    while len(rows) < profiles:
        size = int(rng.integers(1, 6))
        types = [ID_TYPES[int(t)] for t in rng.integers(0, 3, size)]
        ids = [f"{t}-{rng.bytes(8).hex()}" for t in types]
        picked = rng.choice(len(SEGMENT_CATALOG), int(rng.integers(0, 21)), replace=False)
        expiries = NOW + rng.integers(-10 * DAY, 60 * DAY, len(picked))
        segments = {SEGMENT_CATALOG[s]: int(e) for s, e in zip(picked, expiries, strict=True)}
        counters = {
            EVENTS[int(e)]: (float(rng.integers(1, 50)), NOW - int(rng.integers(0, 7 * DAY)), DAY)
            for e in rng.choice(len(EVENTS), int(rng.integers(1, 4)), replace=False)
        }
        first_seen = NOW - int(rng.integers(30 * DAY, 365 * DAY))
        for position, (profile, id_type) in enumerate(zip(ids, types, strict=True)):
            rows.append(
                ProfileRow(
                    profile=profile,
                    id_type=id_type,
                    master=ids[0],
                    first_seen_ms=first_seen + position * DAY,
                    devices=size,
                    as_of_ms=NOW,
                    segments=segments,
                    counters=counters,
                    associations={o: t for o, t in zip(ids, types, strict=True) if o != profile},
                )
            )
        persons.append(ids)
    return persons, rows


def email_of(person: list[str]) -> str:
    return hashlib.sha256(person[0].encode()).hexdigest()


def load(table: happybase.Table, persons: list[list[str]], rows: list[ProfileRow]) -> int:
    """Write every row, star edge and lookup; returns the cells written."""
    cells = 0
    with table.batch(batch_size=20_000) as batch:
        for row in rows:
            row_cells = profile_cells(row)
            batch.put(profile_key(row.profile), row_cells)
            cells += len(row_cells)
        for i, person in enumerate(persons):
            for other in person[1:]:
                batch.put(edge_key(person[0], other), edge_cells(0.9, ["member_id"], NOW - DAY))
                cells += 4
            if i % 5 == 0:
                batch.put(lookup_key("email_sha256", email_of(person)), lookup_cells(person[0]))
                cells += 2
    return cells


def timed(calls: list[Callable[[], object]]) -> tuple[float, float]:
    """p50 and p99 in ms of ``calls`` after ``WARMUP`` unmeasured ones."""
    for call in calls[:WARMUP]:
        call()
    latencies = []
    for call in calls[WARMUP:]:
        started = time.perf_counter()
        call()
        latencies.append(time.perf_counter() - started)
    p50, p99 = np.percentile(np.array(latencies) * 1e3, [50, 99])
    return float(p50), float(p99)


def workloads(
    reader: ProfileReader, rng: np.random.Generator, persons: list[list[str]], count: int
) -> list[tuple[str, int, str, list[Callable[[], object]]]]:
    """(read, round trips, bar, calls) per workload, ``count`` calls each."""
    ids = [profile for person in persons for profile in person]
    several = [person for person in persons if len(person) > 2]

    def pick(values: list, n: int) -> list:
        return [values[int(i)] for i in rng.integers(0, len(values), n)]

    same_person = [tuple(person[1:3]) for person in pick(several, count // 2)]
    anyone = list(zip(pick(ids, count - count // 2), pick(ids, count - count // 2), strict=True))
    pairs = [(same_person + anyone)[int(i)] for i in rng.permutation(count)]
    emails = [email_of(person) for person in pick(persons[::5], count)]
    return [
        ("`segments(id)`", 1, "single", [partial(reader.segments, i) for i in pick(ids, count)]),
        (
            "`segments(email, key_type)`",
            2,
            "",
            [partial(reader.segments, e, key_type="email_sha256") for e in emails],
        ),
        (
            f"`segments_many({BATCH} ids)`",
            1,
            "batch",
            [partial(reader.segments_many, pick(ids, BATCH)) for _ in range(count)],
        ),
        ("`connected(a, b)`", 1, "single", [partial(reader.connected, a, b) for a, b in pairs]),
        ("`profile(id)`", 1, "", [partial(reader.profile, i) for i in pick(ids, count)]),
    ]


def timed_mutate_rows(connection: happybase.Connection) -> list[float]:
    """Wrap the connection's ``mutateRows`` so each call's duration lands in the returned list."""
    durations: list[float] = []
    client = connection.client
    send = client.mutateRows

    def mutate_rows(*args: object) -> object:
        started = time.perf_counter()
        try:
            return send(*args)
        finally:
            durations.append(time.perf_counter() - started)

    client.mutateRows = mutate_rows
    return durations


def measure(
    connection_kwargs: dict,
    persons: list[list[str]],
    rows: list[ProfileRow],
    reads: int,
    seed: int,
    load_only: bool = False,
) -> dict:
    """Load the table into the server at ``connection_kwargs`` and time every workload there."""
    connection = happybase.Connection(**connection_kwargs)
    ensure_table(connection)
    calls = timed_mutate_rows(connection)
    started = time.perf_counter()
    cells = load(connection.table(PROFILE_TABLE), persons, rows)
    load_s = time.perf_counter() - started
    # A read after the last acknowledged batch: the gateway applies what it deferred first.
    connection.table(PROFILE_TABLE).row(profile_key(rows[0].profile))
    readable_s = time.perf_counter() - started
    connection.close()
    if load_only:
        return {
            "cells": cells,
            "load_s": load_s,
            "readable_s": readable_s,
            "mutate_rows_s": sum(calls),
            "calls": len(calls),
        }

    settings = HBaseSettings(
        host=connection_kwargs["host"], port=connection_kwargs["port"], pool_size=1
    )
    with hbase_pool(settings) as pool:
        reader = ProfileReader(table_opener(pool, PROFILE_TABLE))
        # The same seed on every server: the same ids are read in the same order.
        planned = workloads(reader, np.random.default_rng(seed), persons, reads + WARMUP)
        load_before = os.getloadavg()
        results = [(name, trips, bar, *timed(calls)) for name, trips, bar, calls in planned]
        load_after = os.getloadavg()
    return {
        "cells": cells,
        "load_s": load_s,
        "readable_s": readable_s,
        "results": results,
        "load_before": load_before,
        "load_after": load_after,
    }


def on_gateway(
    persons: list[list[str]], rows: list[ProfileRow], reads: int, seed: int, load_only: bool
) -> dict:
    with (
        tempfile.TemporaryDirectory(prefix="profile-reads-") as data_dir,
        EmbeddedGateway(data_dir) as gateway,
    ):
        print(f"gateway pid {gateway.pid}", flush=True)
        return measure(gateway.connection_kwargs(), persons, rows, reads, seed, load_only)


def on_apache(
    persons: list[list[str]], rows: list[ProfileRow], reads: int, seed: int, load_only: bool
) -> dict:
    from profile_store.launchers.apache_hbase import temporary_hbase

    with temporary_hbase() as hbase:
        return measure(hbase.connection_kwargs(), persons, rows, reads, seed, load_only)


def _load_average(measured: dict) -> str:
    before, after = measured["load_before"], measured["load_after"]
    return (
        f"{before[0]:.2f}/{before[1]:.2f}/{before[2]:.2f} before, "
        f"{after[0]:.2f}/{after[1]:.2f}/{after[2]:.2f} after"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", type=int, default=100_000, help="profile rows written")
    parser.add_argument("--reads", type=int, default=5_000, help="measured reads per workload")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--against",
        choices=["gateway", "apache", "both"],
        default="gateway",
        help="the embedded gateway (default), a standalone Apache HBase, or both side by side",
    )
    parser.add_argument(
        "--load-only", action="store_true", help="time the load alone, split by mutateRows"
    )
    args = parser.parse_args(argv)
    persons, rows = generate(np.random.default_rng(args.seed), args.profiles)
    servers = {"gateway": ["gateway"], "apache": ["apache"], "both": ["gateway", "apache"]}
    run = {"gateway": on_gateway, "apache": on_apache}
    measured = {
        server: run[server](persons, rows, args.reads, args.seed, args.load_only)
        for server in servers[args.against]
    }
    if args.load_only:
        print(f"machine: {machine()}")
        for server, result in measured.items():
            inside = result["mutate_rows_s"]
            print(
                f"{server}: {result['cells']:,} cells loaded in {result['load_s']:,.1f} s "
                f"({result['calls']} mutateRows calls: {inside:,.1f} s; building batches: "
                f"{result['load_s'] - inside:,.1f} s); the first read after it returned at "
                f"{result['readable_s']:,.1f} s"
            )
        return 0

    print(
        f"\nProfile reads: {len(rows):,} profile rows ({len(persons):,} persons), "
        f"{args.reads:,} measured reads per workload after {WARMUP} warm-up, seed {args.seed}, "
        "one client (pool of 1), buffered/binary"
    )
    print(f"machine: {machine()}")
    for server, result in measured.items():
        print(
            f"{server}: {result['cells']:,} cells loaded in {result['load_s']:,.1f} s (the "
            f"first read after it returned at {result['readable_s']:,.1f} s); "
            f"load average (1/5/15 min) {_load_average(result)} on {os.cpu_count()} cores"
        )
    print()
    names = list(measured)
    header = " | ".join(f"{server} p50 ms | {server} p99 ms" for server in names)
    ratio = " | p50 apache/gateway | p99 apache/gateway" if len(names) == 2 else ""
    print(f"| read | round trips | {header}{ratio} | bar (p99) |")
    print("| --- | ---: |" + " ---: |" * (2 * len(names) + (2 if ratio else 0)) + " --- |")
    ok = True
    for i, (name, trips, bar, *_) in enumerate(measured[names[0]]["results"]):
        timings = [measured[server]["results"][i][3:] for server in names]
        cells = " | ".join(f"{p50:.3f} | {p99:.3f}" for p50, p99 in timings)
        if ratio:
            (g50, g99), (a50, a99) = timings
            cells += f" | {a50 / g50:.2f}x | {a99 / g99:.2f}x"
        verdict = ""
        if bar:
            # The bars are the product's: they judge the first server measured.
            passed = timings[0][1] <= BARS_MS[bar]
            ok &= passed
            verdict = f"<= {BARS_MS[bar]:g} ms {'ok' if passed else 'MISSED'}"
        print(f"| {name} | {trips} | {cells} | {verdict} |")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
