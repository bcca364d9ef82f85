"""A live profile job that stalls half-way through the puts of its first batch, for its parent to
kill -9 there.

    python live_child.py --bootstrap B --topic T --group G --hbase-port P --table NAME \
        --flag FILE

Puts go out two rows per call; after the first call of the first batch is acknowledged the
child writes the flag file and stalls: some rows of the batch hold its cells, the others do not,
and its offsets are not committed.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import happybase  # noqa: E402
from live_rows import RULES  # noqa: E402

from profile_store.event_bus.settings import EventBusSettings  # noqa: E402
from profile_store.profiles.segment_rules import parse_rules  # noqa: E402
from profile_store.realtime.live_profiles import LiveProfiles, LiveProfilesConfig  # noqa: E402


class StallingBatch:
    """happybase's batch, stalling for good once its first call went out."""

    def __init__(self, batch, flag: Path) -> None:
        self._batch = batch
        self._flag = flag
        original = batch.send

        def send() -> None:
            original()
            flag.write_text("stalled")
            while True:
                time.sleep(60)

        batch.send = send

    def __getattr__(self, name):
        return getattr(self._batch, name)

    def __enter__(self):
        self._batch.__enter__()
        return self

    def __exit__(self, *exc):
        return self._batch.__exit__(*exc)


class StallingTable:
    def __init__(self, table, flag: Path) -> None:
        self._table = table
        self._flag = flag

    def __getattr__(self, name):
        return getattr(self._table, name)

    def batch(self, **kwargs):
        return StallingBatch(self._table.batch(**kwargs), self._flag)


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--topic", "--group", "--hbase-port", "--table", "--flag"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    connection = happybase.Connection("127.0.0.1", int(args.hbase_port))
    table = StallingTable(connection.table(args.table), Path(args.flag))

    @contextlib.contextmanager
    def open_table():
        yield table

    job = LiveProfiles(
        EventBusSettings(bootstrap_servers=args.bootstrap, topic=args.topic),
        open_table,
        LiveProfilesConfig(group_id=args.group, rules=parse_rules(RULES), chunk_rows=2),
    ).start()
    while True:
        job.step(0.2)


if __name__ == "__main__":
    sys.exit(main())
