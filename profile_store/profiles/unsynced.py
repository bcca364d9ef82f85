"""Unsynced segments: ``u:<segment>`` cells from a real-time feed.

A real-time writer that learns a segment puts ``u:<segment> = expiry ms`` on the profile row it
saw; the read path counts it at once for that id. The next compaction folds these cells into
the person's component (every id then carries the segment) and deletes each consumed cell with
its own timestamp as the bound, so a newer write to the same column in between survives.
"""

from __future__ import annotations

from collections.abc import Iterable

from profile_store.profiles.table import (
    PROFILE_PREFIX,
    UNSYNCED,
    decode_ms,
    delete_up_to,
    is_live_qualifier,
    profile_id_of,
)

UNSYNCED_COLUMNS = ("profile", "segment", "expiry_ms")


def read_unsynced(table, batch_size: int = 1000) -> list[tuple[str, str, int, int]]:
    """Every ``u:`` cell as (profile, segment, expiry_ms, cell timestamp); one scan."""
    cells = []
    for key, row in table.scan(
        row_prefix=PROFILE_PREFIX,
        columns=[UNSYNCED],
        include_timestamp=True,
        batch_size=batch_size,
    ):
        profile = profile_id_of(key)
        for name, (value, timestamp) in row.items():
            qualifier = name.partition(b":")[2]
            if is_live_qualifier(qualifier):
                continue  # a live cell: not a segment, and deleted by the run covering its day
            segment = qualifier.decode()
            try:
                expiry = decode_ms(value)
            except ValueError:
                continue  # not an expiry: never applied, and left in place for a human to see
            cells.append((profile, segment, expiry, timestamp))
    return cells


def delete_consumed(table, cells: Iterable[tuple[str, str, int, int]]) -> int:
    """Delete consumed cells, each only up to its own timestamp."""
    return delete_up_to(
        table,
        (
            (PROFILE_PREFIX + profile.encode(), UNSYNCED + b":" + segment.encode(), timestamp)
            for profile, segment, _expiry, timestamp in cells
        ),
    )
