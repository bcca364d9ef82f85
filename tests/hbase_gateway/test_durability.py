"""Crash durability: every write acknowledged before ``kill -9`` is there after a restart."""

from __future__ import annotations

import struct
import threading
from pathlib import Path

import happybase

from profile_store.hbase_gateway.process import EmbeddedGateway

ACKED_BEFORE_KILL = 400


def writer(
    kwargs: dict, worker: int, acked_rows: list[bytes], acked_counts: list[int], enough
) -> None:
    """Write until the gateway dies, recording only what the server acknowledged."""
    connection = happybase.Connection(**kwargs)
    table = connection.table("t")
    batch_no = 0
    try:
        while True:
            keys = [b"w%d-b%06d-%02d" % (worker, batch_no, i) for i in range(20)]
            with table.batch() as batch:
                for key in keys:
                    batch.put(key, {b"cf:a": key, b"cf:b": key[::-1]})
            acked_rows.extend(keys)
            acked_counts.append(table.counter_inc(b"counter", b"cf:w%d" % worker))
            batch_no += 1
            if len(acked_counts) >= ACKED_BEFORE_KILL:
                enough.set()
    except Exception:  # the gateway was killed mid-call: that write was never acknowledged
        return


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    gateway = EmbeddedGateway(tmp_path).start()
    kwargs = gateway.connection_kwargs()
    setup = happybase.Connection(**kwargs)
    setup.create_table("t", {"cf": {}})
    setup.close()

    enough = threading.Event()
    acked: list[tuple[list[bytes], list[int]]] = [([], []) for _ in range(2)]
    threads = [
        threading.Thread(target=writer, args=(kwargs, worker, rows, counts, enough))
        for worker, (rows, counts) in enumerate(acked)
    ]
    for thread in threads:
        thread.start()
    enough.wait(timeout=120)
    gateway.kill()  # SIGKILL while both writers are mid-flight
    for thread in threads:
        thread.join(timeout=30)

    with EmbeddedGateway(tmp_path) as restarted:
        table = happybase.Connection(**restarted.connection_kwargs()).table("t")
        stored = dict(table.scan(columns=[b"cf:a", b"cf:b"]))
        counters = table.row(b"counter")
        for worker, (rows, counts) in enumerate(acked):
            assert len(counts) > 0
            missing = [key for key in rows if stored.get(key) != {b"cf:a": key, b"cf:b": key[::-1]}]
            assert missing == []
            (value,) = struct.unpack(">q", counters[b"cf:w%d" % worker])
            # the increment in flight at the kill may or may not have committed
            assert value in (counts[-1], counts[-1] + 1)
