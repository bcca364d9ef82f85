"""Background compaction, as HBase's region servers do it: reclaim what reads no longer see.

Every put adds a cell version and a re-materialized day rewrites every cell of its rows, so
without compaction the store grows with every run although the live data does not. A table is
compacted in the background once the cells put or deleted since its last compaction reach both
``after_cells`` and half of what it stored after that compaction (so a table is rewritten about
once per doubling, as HBase's size-tiered minor compactions do): versions beyond the family's
``max_versions`` and cells past its TTL are dropped. A table that is being written waits until
it has been quiet for ``quiet_s`` (a daily run writes a table in one burst; compacting in the
middle of it rewrites the rows the burst is about to replace and takes the store's one write
lock from it), unless the burst has already written ``FORCE_AFTER`` times the amount due, so a
table written without pause is still compacted, paced (``PACED_SHARE`` of a core at most) so
that its writers and readers are never stalled for a whole pass. The pass itself (``reclaim.py``)
works in row chunks of short transactions, so readers (WAL) are never blocked and writers wait at
most one chunk. Delete markers stay until a major compaction (``major_compaction.py``), as in
HBase.
The counts survive restarts (the store's ``meta`` table), and a gateway's first pass runs at
start, so gateways that live for one Dagster run each still keep their store compacted.

Quiet is judged from that persistent count, not from this process's own writes: with several
worker processes the compactor runs in a process that serves no client, and a table is quiet
when its count has not moved for ``quiet_s``. A table first seen already due counts as quiet (a
gateway that starts after a run compacts what the run left at once, as before).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from .store import Store

logger = logging.getLogger(__name__)

DEFAULT_AFTER_CELLS = 10_000
DEFAULT_INTERVAL_S = 5.0
DEFAULT_QUIET_S = 2.0
FORCE_AFTER = 2  # times the cells due: compact a table written without pause anyway, paced
PACED_SHARE = 0.3  # of a core, at most, for a compaction of a table still being written
GROWTH = 0.5  # written cells, as a share of the cells stored after the last compaction


class BackgroundCompactor:
    """A daemon thread that compacts the tables written enough since their last compaction."""

    def __init__(
        self,
        store: Store,
        after_cells: int = DEFAULT_AFTER_CELLS,
        interval_s: float = DEFAULT_INTERVAL_S,
        quiet_s: float = DEFAULT_QUIET_S,
    ) -> None:
        if after_cells < 1:
            raise ValueError(f"after_cells must be at least 1, got {after_cells}")
        self.store = store
        self.after_cells = after_cells
        self.interval_s = interval_s
        self.quiet_s = quiet_s
        self._last_count: dict[bytes, tuple[int, float]] = {}  # name -> (written, since when)
        self.waiting_for_quiet = False  # the last pass found a table due but not yet quiet
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="hbase-gateway-compactor", daemon=True
        )

    def start(self) -> BackgroundCompactor:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        self._thread.join(timeout)

    def seconds_unchanged(self, name: bytes, written: int) -> float:
        """Seconds since ``name``'s written count was first seen at its current value (inf at
        the first sighting): writes from every process move that count."""
        now = time.monotonic()
        seen = self._last_count.get(name)
        if seen is None:
            self._last_count[name] = (written, -math.inf)
            return math.inf
        if seen[0] != written:
            self._last_count[name] = (written, now)
            return 0.0
        return now - seen[1]

    def compact_due_tables(self) -> list[bytes]:
        """One pass: compact every table due; returns their names."""
        due = []
        self.waiting_for_quiet = False
        names = self.store.table_names()
        for gone in set(self._last_count) - set(names):
            del self._last_count[gone]
        for name in names:
            written = self.store.written_since_compaction(name)
            stored_after = self.store.stored_after_compaction(name)
            threshold = max(self.after_cells, GROWTH * stored_after)
            quiet = self.seconds_unchanged(name, written) >= self.quiet_s
            if written >= threshold:
                if quiet:
                    due.append((name, False))
                elif written >= FORCE_AFTER * threshold:
                    due.append((name, True))
                else:
                    self.waiting_for_quiet = True
        compacted = []
        for name, paced in due:
            if self._stopping.is_set():
                break
            started = time.monotonic()
            before = self.store.stored_cells(name)
            if not self.store.compact(name, major=False, between_chunks=self._pace(paced)):
                break  # stopping
            after = self.store.stored_cells(name)
            logger.info(
                "compacted %s: %d stored cells -> %d in %.1f s%s",
                name.decode(errors="replace"),
                before,
                after,
                time.monotonic() - started,
                " (paced: written meanwhile)" if paced else "",
            )
            compacted.append(name)
        return compacted

    def _pace(self, paced: bool) -> Callable[[float], bool]:
        """Between two chunks: a compaction of a table still being written rests long enough
        to use ``PACED_SHARE`` of a core, so the writers and readers it shares the machine with
        are slowed a little for longer instead of stalled for the whole pass (at half a core,
        the live job at 5,000 events/s still saw 7-9 s stalls); False once the compactor is
        stopping."""
        if not paced:
            return lambda _seconds: not self._stopping.is_set()
        rest = (1 - PACED_SHARE) / PACED_SHARE
        return lambda seconds: not self._stopping.wait(seconds * rest)

    def _run(self) -> None:
        # A first pass at start: an embedded gateway may live for one run only.
        wait = 0.0
        while not self._stopping.wait(wait):
            wait = self.interval_s
            try:
                self.compact_due_tables()
                if self.waiting_for_quiet:  # look again once the table may have gone quiet
                    wait = min(self.interval_s, self.quiet_s)
            except Exception:  # a table dropped meanwhile, a closed store: try again next time
                logger.exception(
                    "background compaction failed; retrying in %.0f s", self.interval_s
                )
