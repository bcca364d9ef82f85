"""A lake sink that stalls at a chosen point of its first batch, for its parent to kill -9.

    python sink_child.py --bootstrap B --topic T --group G --lake DIR --flag FILE \
        --stall-at write-0|write-1|final-commit

``write-N``: before the (N+1)-th landing file is written (its intent already committed);
``final-commit``: every file written, before the batch's offsets are committed. The flag file
is written once the sink stalls there.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from profile_store.event_bus.settings import EventBusSettings  # noqa: E402
from profile_store.lake.landing_watch import is_landing_data  # noqa: E402
from profile_store.lake.storage import LocalLakeStorage  # noqa: E402
from profile_store.realtime.lake_sink import LakeSink, LakeSinkConfig  # noqa: E402


def stall(flag: Path) -> None:
    flag.write_text("stalled")
    while True:
        time.sleep(60)


class StallingLake(LocalLakeStorage):
    def __init__(self, root: Path, stall_before_write: int | None, flag: Path) -> None:
        super().__init__(root)
        self.stall_before_write = stall_before_write
        self.flag = flag
        self.writes = 0

    def write_bytes(self, relative: str, data: bytes) -> None:
        if is_landing_data(relative):
            if self.writes == self.stall_before_write:
                stall(self.flag)
            self.writes += 1
        super().write_bytes(relative, data)


def main() -> int:
    parser = argparse.ArgumentParser()
    for name in ("--bootstrap", "--topic", "--group", "--lake", "--flag", "--stall-at"):
        parser.add_argument(name, required=True)
    args = parser.parse_args()
    flag = Path(args.flag)
    stall_before = int(args.stall_at.split("-")[1]) if args.stall_at.startswith("write-") else None
    storage = StallingLake(Path(args.lake), stall_before, flag)
    sink = LakeSink(
        EventBusSettings(bootstrap_servers=args.bootstrap, topic=args.topic),
        storage,
        LakeSinkConfig(group_id=args.group, flush_seconds=1.0, close_check_seconds=3600),
    )
    if args.stall_at == "final-commit":
        commit = sink._commit

        def stalling_commit(offsets):
            if all(tp.metadata is None for tp in offsets):  # the batch's own commit
                stall(flag)
            return commit(offsets)

        sink._commit = stalling_commit
    sink.start()
    while True:
        sink.step(0.2)


if __name__ == "__main__":
    sys.exit(main())
