"""A writer's calls while the embedded gateway compacts in the background: how long a put waits.

The live profile job rewrites a lineage cell on every row of a person with each batch, so
overwritten versions pile up and the gateway's background compaction runs over the whole
``profiles`` table every few minutes. This loads ``--persons`` compacted persons (as
``bench/realtime.py`` does), then puts live cells on the rows of 200 random persons per call
(about 600 cells, a live job's call), each call with a new version, for ``--seconds``; it prints
the compactions the gateway logged (with their duration), the slowest calls with the time they
started, and the calls' p50 / p99 / max.

    .venv/bin/python bench/compaction_stalls.py --seconds 240
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from realtime import load_profiles, population  # noqa: E402

VALUE = (
    b'{"f":{"view_item":[1.0,1795745413000]},"h":604800000,"o":12345,'
    b'"p":"1795660800000|3|bench-0000001-0","s":{"viewers":1795832000000},"v":12346}'
)


def clock(epoch_s: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(epoch_s)) + f".{int(epoch_s % 1 * 1000):03d}"


def measure(args: argparse.Namespace) -> None:
    import happybase

    from profile_store.hbase.encoded_puts import RowPuts, mutate_rows_ts
    from profile_store.hbase_gateway.process import EmbeddedGateway
    from profile_store.profiles.live_cells import day_end_ms
    from profile_store.profiles.table import PROFILE_TABLE, ensure_table, profile_key

    with (
        tempfile.TemporaryDirectory(prefix="bench-stalls-") as tmp,
        EmbeddedGateway(Path(tmp) / "hbase") as gateway,
    ):
        connection = happybase.Connection(gateway.host, gateway.port)
        ensure_table(connection)
        table = connection.table(PROFILE_TABLE)
        people = population(args.persons, args.seed)
        yesterday = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 86_400))
        load_profiles(table, people, day_end_ms(yesterday))
        rng = random.Random(args.seed)
        calls: list[tuple[float, float]] = []
        started = time.time()
        version = 1
        while time.time() - started < args.seconds:
            puts = RowPuts()
            for _ in range(200):
                ids = rng.choice(people.persons)
                cells = {b"u:" + yesterday.encode() + b"|0|" + ids[0].encode(): VALUE}
                for profile in ids:
                    puts.add(profile_key(profile), cells)
            sent = time.time()
            mutate_rows_ts(connection.client, table.name, puts, version, 999)
            calls.append((sent, time.time() - sent))
            version += 1
        connection.close()
        log = (Path(tmp) / "hbase" / "gateway.log").read_text().splitlines()
    print(*[line for line in log if "compacted" in line], sep="\n")
    print("slowest calls (start, seconds):")
    for sent, seconds in sorted(sorted(calls, key=lambda c: -c[1])[:10]):
        print(f"  {clock(sent)} {seconds:.3f}")
    durations = sorted(seconds for _, seconds in calls)
    print(
        f"{len(calls):,} calls: p50 {durations[len(durations) // 2] * 1000:.0f} ms, "
        f"p99 {durations[int(len(durations) * 0.99)] * 1000:.0f} ms, "
        f"max {durations[-1] * 1000:.0f} ms"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=240)
    parser.add_argument("--persons", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=7)
    measure(parser.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
