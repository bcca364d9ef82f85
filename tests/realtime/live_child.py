"""A live profile job that stalls half-way through the puts of its first batch, for its parent to
kill -9 there.

    python live_child.py --bootstrap B --topic T --group G --hbase-port P --table NAME \
        --flag FILE

Puts go out one row per call; once the first call of the first batch is acknowledged the child
writes the flag file and stalls: some rows of the batch hold its cells, the others do not, and
its offsets are not committed.
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


def stall_after_first_call(client, flag: Path) -> None:
    """The Thrift client's puts: once the first is acknowledged, the process stalls for good
    (at the client's reply, where every way of sending a put ends)."""
    receive = client._recv

    def receive_then_stall(api: str):
        reply = receive(api)
        if api == "mutateRowsTs":
            flag.write_text("stalled")
            while True:
                time.sleep(60)
        return reply

    client._recv = receive_then_stall


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--topic", "--group", "--hbase-port", "--table", "--flag"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    connection = happybase.Connection("127.0.0.1", int(args.hbase_port))
    stall_after_first_call(connection.client, Path(args.flag))

    @contextlib.contextmanager
    def open_table():
        yield connection.table(args.table)

    job = LiveProfiles(
        EventBusSettings(bootstrap_servers=args.bootstrap, topic=args.topic),
        open_table,
        LiveProfilesConfig(group_id=args.group, rules=parse_rules(RULES), put_cells=1),
    ).start()
    while True:
        job.step(0.2)


if __name__ == "__main__":
    sys.exit(main())
