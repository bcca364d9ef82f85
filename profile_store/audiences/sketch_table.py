"""The ``sketches`` HBase table: its families, cell layout, writes and stale-row removal.

```
row    app|event_type|yyyymmdd|attr_hash16        (see rowkey.py for every row kind)
s:theta    compact theta sketch of the row's users
s:counts   integer tuple sketch: events per user (summed)
a:<name>   on combination rows, one column per kept attribute: its value
m:events   events in the row (8-byte big-endian)
m:users    estimated unique users (ASCII, for humans in the HBase shell)
m:agg      "1" on the aggregate row of (app, event, day)
m:kept     on the aggregate row: JSON list of the attributes kept that day
m:trimmed  on the aggregate row: JSON object, per attribute trimmed that day, the rule's limit
           it crossed and its figures (why a filter on it is refused)
m:attr     on the kept marker row of (app, event, day, attribute): the attribute's name
m:built    on the built-day row of a day: the number of (app, event type) pairs written
m:pairs    on the built-day row: JSON [[app, event type], ...] of the pairs with rows that day
m:pair     on the pair marker row of (app, event, day, a1, a2): JSON [a1, a2]
```

Marginal and pair rows carry the ``s:`` and the count columns but no ``a:`` columns, so the
server-side filters of multi-attribute scans never select them.
"""

from __future__ import annotations

import contextlib
import json
import struct
from collections.abc import Callable, Iterable, Iterator

import happybase

from profile_store.hbase.pool import table_opener

SKETCH_TABLE = "sketches"
FAMILIES = {"s": {"max_versions": 1}, "a": {"max_versions": 1}, "m": {"max_versions": 1}}

THETA = b"s:theta"
COUNTS = b"s:counts"
EVENTS = b"m:events"
USERS = b"m:users"
AGGREGATE_MARK = b"m:agg"
KEPT = b"m:kept"
TRIMMED = b"m:trimmed"
KEPT_MARKER = b"m:attr"
BUILT = b"m:built"
BUILT_PAIRS = b"m:pairs"
PAIR_MARKER = b"m:pair"

ROW_KINDS = ("combination", "aggregate", "marginal", "kept_marker", "pair", "pair_marker")


def attribute_column(name: str) -> bytes:
    return b"a:" + name.encode()


def ensure_table(connection, name: str = SKETCH_TABLE) -> None:
    """Create the table if it is missing (a no-op on every later run)."""
    if name.encode() not in connection.tables():
        connection.create_table(name, FAMILIES)


def row_cells(row: dict) -> dict[bytes, bytes]:
    """The cells of one sketch row (a dict with the columns of ``day_sketch_rows``)."""
    kind = row["row_kind"]
    if kind not in ROW_KINDS:
        raise ValueError(f"row_kind: expected one of {ROW_KINDS}, got {kind!r}")
    if kind == "kept_marker":
        return {KEPT_MARKER: row["attribute"].encode()}
    if kind == "pair_marker":
        return {PAIR_MARKER: json.dumps([row["attribute"], row["attribute2"]]).encode()}
    cells = {
        THETA: bytes(row["theta"]),
        COUNTS: bytes(row["counts"]),
        EVENTS: struct.pack(">q", int(row["events"])),
        USERS: f"{row['users_estimate']:.0f}".encode(),
    }
    if kind == "combination":
        for pair in row["combination"] or []:
            cells[attribute_column(pair["key"])] = pair["value"].encode()
    if kind == "aggregate":
        cells[AGGREGATE_MARK] = b"1"
        cells[KEPT] = json.dumps(sorted(row["kept_attributes"])).encode()
        if row.get("trimmed_attributes"):
            cells[TRIMMED] = row["trimmed_attributes"].encode()
    return cells


def write_rows(table, rows: Iterable[dict], batch_size: int = 500) -> int:
    """Put every row in batches; returns the number of rows written."""
    written = 0
    with table.batch(batch_size=batch_size) as batch:
        for row in rows:
            batch.put(row["rowkey"].encode(), row_cells(row))
            written += 1
    return written


def keys_with_prefix(table, prefix: bytes) -> Iterator[bytes]:
    """Row keys under ``prefix``, read key-only."""
    for key, _ in table.scan(
        row_prefix=prefix, filter=b"KeyOnlyFilter()", batch_size=1000, columns=[b"m"]
    ):
        yield key


def delete_rows(table, keys: Iterable[bytes], batch_size: int = 500) -> int:
    deleted = 0
    with table.batch(batch_size=batch_size) as batch:
        for key in keys:
            batch.delete(key)
            deleted += 1
    return deleted


def sketch_table_opener(
    pool: happybase.ConnectionPool, table_name: str = SKETCH_TABLE
) -> Callable[[], contextlib.AbstractContextManager[happybase.Table]]:
    """``table_opener`` of the sketch table, the one ``AudienceEngine`` reads."""
    return table_opener(pool, table_name)
