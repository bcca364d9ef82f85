"""The expiry purge: delete the expired segment cells of profile rows, throttled.

Reads never return expired segments (``reads.py``), so this only reclaims space and keeps rows
small for the bidders; it is a batch job (``profiles profile purge``), paced so that it never
starves them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from profile_store.profiles.reads import (
    MAX_PAGE_SIZE,
    PROFILE_STOP,
    InvalidRequest,
    OpenTable,
    check_count,
    check_now,
    check_optional_id,
)
from profile_store.profiles.table import (
    PROFILE_PREFIX,
    SEGMENTS,
    UNSYNCED,
    decode_ms,
    delete_up_to,
    is_live_qualifier,
    profile_id_of,
    profile_key,
)

DEFAULT_PURGE_RATE = 500.0
"""Rows per second the purge scans by default: background work must not starve the bidders."""


@dataclass(frozen=True)
class PurgeReport:
    """What a purge did; ``resume_after`` is set when ``max_rows`` stopped it early."""

    rows_scanned: int
    rows_purged: int
    cells_deleted: int
    cells_unreadable: int  # values that are no expiry: never deleted, left for a human
    pages: int
    resume_after: str | None  # pass as ``after`` to continue; None: the scan reached the end
    elapsed_s: float


def purge_expired(
    open_table: OpenTable,
    now_ms: int | None = None,
    *,
    max_rows_per_second: float = DEFAULT_PURGE_RATE,
    max_rows: int | None = None,
    after: str | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> PurgeReport:
    """Delete expired ``g:``/``u:`` cells of profile rows, throttled. 4+ round trips a page.

    ``open_table`` yields the ``profiles`` table (as ``ProfileReader``'s). It walks ``p|`` in
    pages of about one second's worth of rows (each page its own short scan, so no scanner lease
    outlives a pause), deletes each expired cell only up to the timestamp it was read with
    (``table.delete_up_to``), then sleeps so the scan never exceeds ``max_rows_per_second`` on
    average. A compaction writing a fresh expiry into the same column meanwhile writes a newer
    version, which the bounded delete leaves alone; a cell whose value is no expiry is never
    deleted. ``rows_scanned`` counts rows holding any segment cell; ``max_rows`` stops the purge
    after that many, and the report's ``resume_after``, passed back as ``after``, continues
    where it stopped.
    """
    if isinstance(max_rows_per_second, bool) or not (
        isinstance(max_rows_per_second, int | float) and max_rows_per_second > 0
    ):
        raise InvalidRequest("max_rows_per_second", "must be a positive number")
    if max_rows is not None:
        check_count("max_rows", max_rows, 1, None)
    check_optional_id("after", after)
    now = check_now(now_ms)
    page_rows = max(1, min(MAX_PAGE_SIZE, int(max_rows_per_second)))
    started = clock()
    scanned = purged = deleted = unreadable = pages = 0
    start = PROFILE_PREFIX if after is None else profile_key(after) + b"\x00"
    resume_after: str | None = None
    while True:
        wanted = page_rows if max_rows is None else min(page_rows, max_rows - scanned)
        if wanted == 0:
            resume_after = profile_id_of(start[:-1])
            break
        if pages:
            pause = started + scanned / max_rows_per_second - clock()
            if pause > 0:
                sleep(pause)
        with open_table() as table:
            page = list(
                table.scan(
                    row_start=start,
                    row_stop=PROFILE_STOP,
                    columns=[SEGMENTS, UNSYNCED],
                    include_timestamp=True,
                    limit=wanted,
                    batch_size=wanted,
                )
            )
            expired, skipped = _expired_cells(page, now)
            deleted += delete_up_to(table, expired)
        pages += 1
        scanned += len(page)
        purged += len({key for key, _, _ in expired})
        unreadable += skipped
        if len(page) < wanted:
            break
        start = page[-1][0] + b"\x00"
    return PurgeReport(
        rows_scanned=scanned,
        rows_purged=purged,
        cells_deleted=deleted,
        cells_unreadable=unreadable,
        pages=pages,
        resume_after=resume_after,
        elapsed_s=clock() - started,
    )


def _expired_cells(
    page: Iterable[tuple[bytes, dict[bytes, tuple[bytes, int]]]], now_ms: int
) -> tuple[list[tuple[bytes, bytes, int]], int]:
    """``(key, column, timestamp)`` of every expired cell, and the count of unreadable ones."""
    expired: list[tuple[bytes, bytes, int]] = []
    unreadable = 0
    for key, cells in page:
        for name, (value, timestamp) in cells.items():
            if is_live_qualifier(name.partition(b":")[2]):
                continue  # a live cell: the daily run that covers its day deletes it
            try:
                expiry = decode_ms(value)
            except ValueError:
                unreadable += 1
                continue
            if expiry <= now_ms:
                expired.append((key, name, timestamp))
    return expired, unreadable
