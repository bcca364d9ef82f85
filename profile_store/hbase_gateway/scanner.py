"""Server-side scanners: HBase ``Scan`` semantics on top of the store's chunked range reads.

A scanner holds no database cursor between calls; it remembers the next row boundary and reads
the following chunk when the client asks for more. That keeps idle scanners free (no open read
transaction pinning the WAL) and lets any connection thread serve any scanner.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import GatewayIllegalArgument, GatewayInternalError, GatewayIOError
from .schema import StoredCell, TableInfo, now_ms
from .store import Bound, Store
from .visible_cells import RowCells, finish_cells, group_rows
from .wire import encode_newest_rows, encode_row

_MIN_CHUNK_CELLS = 256
_MAX_CHUNK_CELLS = 20_000


@dataclass(frozen=True)
class ScanSpec:
    """The parts of Thrift's ``TScan`` (and the 0.90 ``scannerOpen*`` calls) the gateway uses."""

    start_row: bytes | None = None  # inclusive; for reversed scans the highest key
    stop_row: bytes | None = None  # exclusive; for reversed scans the lowest key
    columns: Sequence[bytes] | None = None
    before_ts: int | None = None  # only cells strictly older than this
    caching: int | None = None
    batch_size: int | None = None  # max cells per returned (partial) row
    filter_string: bytes | None = None
    sort_columns: bool = False
    reversed: bool = False


def _as_row_cells(row: bytes, cells: list[StoredCell]) -> RowCells:
    return (row, cells)


class Scanner:
    """One open scan; ``next_rows`` returns ``[]`` once it is exhausted.

    ``build(row, cells)`` turns each (possibly partial) row into the object the caller sends;
    it runs as rows are read, so ``prefetch`` prepares a whole reply ahead of time.
    """

    def __init__(
        self,
        store: Store,
        table: bytes,
        spec: ScanSpec,
        build: Callable[[bytes, list[StoredCell]], Any] = _as_row_cells,
        *,
        encoded: bool = False,
    ) -> None:
        """``encoded``: rows are encoded for the wire (``wire``) instead of ``build``."""
        self._store = store
        self.info: TableInfo = store.readable(table)
        self.encoded = encoded
        if encoded:
            prefixes = self.info.column_prefixes

            def build(row: bytes, cells: list[StoredCell]) -> bytes:
                return encode_row(prefixes, row, cells)

        self._build = build
        self.spec = spec
        self._selection = self.info.select(spec.columns)
        chosen = None if self._selection is None else self._selection.family_ids()
        self._families = [
            family.name
            for fam, family in enumerate(self.info.families)
            if chosen is None or fam in chosen
        ]
        if spec.batch_size is not None and spec.batch_size < 1:
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: batchSize must be positive, got {spec.batch_size}"
            )
        self._filter = _parse_filter(spec.filter_string) if spec.filter_string else None
        if self._filter is not None and spec.reversed:
            self._filter.set_reversed(True)  # PrefixFilter/InclusiveStopFilter end differently
        if self._filter is not None and spec.reversed and self._loads_on_demand():
            raise GatewayIOError(
                "DoNotRetryIOException: Reverse scan with loading CFs on demand is not supported"
            )
        if self._filter is not None and spec.batch_size and self._filter.has_filter_row():
            # HBase's client retries this region-server error (16 attempts, about a minute)
            # before reporting it; the gateway reports it at once.
            raise GatewayIOError(
                "RetriesExhaustedException: Failed after attempts=1, exceptions: "
                "org.apache.hadoop.hbase.filter.IncompatibleFilterException: Cannot set batch on "
                "a scan using a filter that returns true for filter.hasFilterRow"
            )
        start = spec.start_row or None
        stop = spec.stop_row or None
        if spec.reversed:
            self._lower: Bound | None = None if stop is None else (stop, False)
            self._upper: Bound | None = None if start is None else (start, True)
        else:
            self._lower = None if start is None else (start, True)
            self._upper = None if stop is None else (stop, False)
        self._pending: deque[Any] = deque()
        self._exhausted = self._empty_range()
        self._lock = threading.Lock()
        self.last_used = time.monotonic()
        if self._filter is not None:
            self._filter.reset()

    def _loads_on_demand(self) -> bool:
        """Whether HBase would load a family of this scan only for the rows the filter keeps
        (a family the filter calls not essential), which its reversed scanner refuses."""
        scan_filter = self._filter
        if scan_filter is None:  # no filter: every family is essential
            return False
        return any(not scan_filter.is_family_essential(family) for family in self._families)

    def _empty_range(self) -> bool:
        if self._lower is None or self._upper is None:
            return False
        return self._lower[0] >= self._upper[0]

    def next_rows(self, count: int) -> list[Any]:
        """Up to ``count`` results (partial rows when batchSize is set), in scan order."""
        with self._lock:
            self.last_used = time.monotonic()
            pending = self._pending
            while len(pending) < count and not self._exhausted:
                self._fill(count - len(pending))
            if len(pending) <= count:
                out = list(pending)
                pending.clear()
                return out
            return [pending.popleft() for _ in range(count)]

    def prefetch(self, count: int) -> None:
        """Prepare the next ``count`` results before they are asked for.

        Called once a reply has been sent: the client decodes that reply while this runs, so on
        a multi-core machine reading the next chunk costs the client no wall time.
        """
        with self._lock:
            while len(self._pending) < count and not self._exhausted:
                self._fill(count - len(self._pending))

    def _fill(self, wanted: int) -> None:
        """Read the next chunk of rows into the pending queue (possibly none, if filtered)."""
        info = self._store.readable(self.info.name)
        if info.table_id != self.info.table_id:
            raise GatewayIOError("TableNotFoundException: the scanned table was deleted")
        max_cells = min(max(wanted * 4, _MIN_CHUNK_CELLS, self.spec.caching or 0), _MAX_CHUNK_CELLS)
        batch = self.spec.batch_size
        # The common scan (encoded, forward, no filter, no batch) encodes the flat chunk in one
        # pass; the others group it into rows first.
        flat = self.encoded and self._filter is None and not batch and not self.spec.reversed
        cells, bound = self._store.read_range_cells(
            info,
            self._lower,
            self._upper,
            reverse=self.spec.reversed,
            selection=self._selection,
            before_ts=self.spec.before_ts,
            max_cells=max_cells,
        )
        if bound is None:
            self._exhausted = True
        elif self.spec.reversed:
            self._upper = bound
        else:
            self._lower = bound
        floors = info.ttl_floors(now_ms())
        if flat:
            encode_newest_rows(info.column_prefixes, cells, floors, self._pending)
            return
        rows = group_rows(cells, self.spec.reversed)
        if self.encoded and self._filter is None and not batch:  # reversed: rows regrouped
            in_hbase_order = itertools.chain.from_iterable(row_cells for _, row_cells in rows)
            encode_newest_rows(info.column_prefixes, in_hbase_order, floors, self._pending)
            return
        limits = info.version_limits(1)
        build = self._build
        for row, row_cells in rows:
            if self._filter is None:
                kept = finish_cells(row_cells, floors, limits)
            else:
                if self._filter.filter_all_remaining():
                    self._exhausted = True
                    return
                kept = self._apply_filter(row, finish_cells(row_cells, floors, None))
            if not kept:
                continue
            if batch and len(kept) > batch:
                self._pending.extend(
                    build(row, kept[i : i + batch]) for i in range(0, len(kept), batch)
                )
            else:
                self._pending.append(build(row, kept))
        if self._filter is not None and self._filter.filter_all_remaining():
            self._exhausted = True

    def _apply_filter(self, row: bytes, cells: list[StoredCell]) -> list[StoredCell]:
        """Run the filter over a row's live cells, all versions; it counts versions itself.

        HBase counts versions after the filter (``versionsAfterFilter``, 1 for a Thrift scan),
        so a filter never sees a column's older versions once one version was included.
        """
        from .row_filter import Cell

        families = self.info.families
        given = [Cell(families[c[1]].name, c[2], c[3], c[4]) for c in cells]
        assert self._filter is not None
        kept = self._filter.filter_row(row, given, max_versions=1, families=self._families)
        if not kept:
            return []
        index = self.info.family_index
        return [(row, index[c.family], c.qualifier, c.timestamp, c.value) for c in kept]


def _parse_filter(text: bytes) -> Any:
    """Parse an HBase filter string; ``ParseFilter``'s IllegalArgumentException is not caught by
    HBase's handler, so a bad filter string is an internal error (TApplicationException)."""
    # imported only when a scan carries a filter
    from .filter_language import FilterSyntaxError, parse_filter

    try:
        return parse_filter(text)
    except FilterSyntaxError as exc:
        raise GatewayInternalError(f"IllegalArgumentException: {exc}") from exc


class ScannerRegistry:
    """Open scanners by Thrift id; idle ones are closed after ``idle_timeout`` seconds.

    HBase expires abandoned scanners with a lease; without it a client that dies mid-scan
    would leak its scanner forever.
    """

    def __init__(self, idle_timeout: float = 600.0) -> None:
        self._scanners: dict[int, Scanner] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._idle_timeout = idle_timeout

    def add(self, scanner: Scanner) -> int:
        with self._lock:
            self._expire_idle()
            while True:
                scanner_id = next(self._ids) % (2**31 - 1) + 1
                if scanner_id not in self._scanners:
                    break
            self._scanners[scanner_id] = scanner
            return scanner_id

    def get(self, scanner_id: int) -> Scanner:
        scanner = self._scanners.get(scanner_id)
        if scanner is None:
            raise GatewayIllegalArgument("scanner ID is invalid")
        return scanner

    def close(self, scanner_id: int) -> None:
        with self._lock:
            if self._scanners.pop(scanner_id, None) is None:
                raise GatewayIllegalArgument("scanner ID is invalid")

    def _expire_idle(self) -> None:
        deadline = time.monotonic() - self._idle_timeout
        for scanner_id in [i for i, s in self._scanners.items() if s.last_used < deadline]:
            del self._scanners[scanner_id]
