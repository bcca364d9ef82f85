"""Writing compacted rows to the ``profiles`` table from Spark executors.

Each Spark partition opens its own happybase connection and works in chunks: one batched read
of the chunk's current ``g``/``f``/``a`` columns and ``s:master``, then one batch that puts the
new cells and deletes the columns the new row no longer has. So a re-run replaces rows exactly
(no stale segment survives) and every row changes in one atomic row mutation: a bidder never
sees a row half-way between two compactions.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import asdict
from itertools import islice

from pyspark.sql import DataFrame

from profile_store.hbase.settings import ThriftAddress
from profile_store.profiles.table import (
    AS_OF,
    ASSOCIATIONS,
    FEATURES,
    MASTER,
    SEGMENTS,
    ProfileRow,
    decode_ms,
    edge_cells,
    edge_key,
    lookup_cells,
    lookup_key,
    profile_cells,
    profile_key,
)
from profile_store.spark.arrow_partitions import sum_over_partitions

REPLACED = (SEGMENTS, FEATURES, ASSOCIATIONS)


def profile_row(row: dict, half_life_ms: int, as_of_ms: int) -> ProfileRow:
    """A ``compacted_rows`` row, as Arrow's ``to_pylist`` gives it (maps as lists of key-value
    pairs, structs as dicts), as the table's ``ProfileRow``."""
    return ProfileRow(
        profile=row["profile"],
        id_type=row["id_type"],
        master=row["master"],
        first_seen_ms=int(row["first_seen_ms"]),
        devices=int(row["devices"]),
        as_of_ms=as_of_ms,
        segments={k: int(v) for k, v in row["segments"] or []},
        counters={
            event: (float(c["value"]), int(c["last_ms"]), half_life_ms)
            for event, c in row["counters"] or []
        },
        associations={a["profile"]: a["id_type"] or "" for a in row["associations"] or []},
    )


def _stale_columns(current: dict[bytes, bytes], new: dict[bytes, bytes]) -> list[bytes]:
    return [
        name
        for name in current
        if name not in new and (name == MASTER or name.partition(b":")[0] in REPLACED)
    ]


def replace_profiles(table, rows: list[ProfileRow], timestamp: int | None = None) -> int:
    """Write ``rows`` as one read and one batch; returns the number of stale cells deleted.

    Only the cells whose value differs from the stored one are put: most of a person's row
    (type, first seen, id type, master, linked ids, often the segments) is the same from one
    day to the next, and every cell not written is HBase work saved (a put, a version to
    compact away). ``s:as_of`` changes with every compaction, so every row is still touched.
    A row whose stored ``s:as_of`` is later than the new row's is left as it is. With a
    ``timestamp`` every put and delete carries it (``mutateRowsTs``), as a bulk load's do
    (``bulk_profiles``); without, the server's clock.
    """
    keys = [profile_key(row.profile) for row in rows]
    current = dict(table.rows(keys, columns=[b"s", b"g", b"f", b"a"]))
    stale = 0
    with table.batch(timestamp=timestamp) as batch:
        for key, row in zip(keys, rows, strict=True):
            stored = current.get(key, {})
            if AS_OF in stored and decode_ms(stored[AS_OF]) > row.as_of_ms:
                # A later day's compaction wrote this row: an earlier day re-run afterwards (a
                # backfill, an automation run, a UI re-run) must not take the person back.
                continue
            cells = profile_cells(row)
            old = _stale_columns(stored, cells)
            if old:
                batch.delete(key, columns=old)
                stale += len(old)
            changed = {name: value for name, value in cells.items() if stored.get(name) != value}
            if changed:
                batch.put(key, changed)
    return stale


def _write_profiles(
    rows: Iterator[dict],
    address: dict,
    table_name: str,
    chunk: int,
    half_life_ms: int,
    as_of_ms: int,
    timestamp: int | None,
) -> tuple[int, int]:
    connection = ThriftAddress(**address).connect()
    written = stale = 0
    try:
        table = connection.table(table_name)
        while part := list(islice(rows, chunk)):
            stale += replace_profiles(
                table, [profile_row(row, half_life_ms, as_of_ms) for row in part], timestamp
            )
            written += len(part)
    finally:
        connection.close()
    return written, stale


def write_profiles(
    rows: DataFrame,
    address: ThriftAddress,
    table_name: str,
    half_life_ms: int,
    as_of_ms: int,
    timestamp: int | None = None,
    chunk: int = 500,
) -> tuple[int, int]:
    """Replace every row of ``rows`` (``compacted_rows``) through Thrift, from the executors;
    returns (rows, stale cells removed)."""
    settings = asdict(address)
    # In key order, each chunk's new cells land in neighbouring pages of the store, not all over.
    written, stale = sum_over_partitions(
        rows.sortWithinPartitions("profile"),
        lambda part: _write_profiles(
            part, settings, table_name, chunk, half_life_ms, as_of_ms, timestamp
        ),
        ("written", "stale"),
    )
    return written, stale


def _put_cells(rows: Iterator[dict], address: dict, table_name: str, kind: str) -> tuple[int]:
    connection = ThriftAddress(**address).connect()
    count = 0
    try:
        with connection.table(table_name).batch(batch_size=500) as batch:
            for row in rows:
                if kind == "edge":
                    key = edge_key(row["profile_a"], row["profile_b"])
                    cells = edge_cells(row["weight"], row["rules"], row["first_seen_ms"])
                elif row["master"] is None:
                    batch.delete(lookup_key(row["key_type"], row["key"]))
                    count += 1
                    continue
                else:
                    key = lookup_key(row["key_type"], row["key"])
                    cells = lookup_cells(row["master"])
                batch.put(key, cells)
                count += 1
    finally:
        connection.close()
    return (count,)


def write_edges(edges: DataFrame, address: ThriftAddress, table_name: str) -> int:
    """Put edge rows (profile_a, profile_b, weight, rules, first_seen_ms)."""
    settings = asdict(address)
    (count,) = sum_over_partitions(
        edges, lambda part: _put_cells(part, settings, table_name, "edge")
    )
    return count


def write_lookups(lookups: DataFrame, address: ThriftAddress, table_name: str) -> int:
    """Put lookup rows (key_type, key, master); a null master deletes the lookup row."""
    settings = asdict(address)
    (count,) = sum_over_partitions(
        lookups, lambda part: _put_cells(part, settings, table_name, "lookup")
    )
    return count


def delete_edges(table, pairs: Iterable[tuple[str, str]]) -> int:
    """Delete the edge rows of withdrawn pairs (their key became a super-node)."""
    deleted = 0
    with table.batch(batch_size=500) as batch:
        for a, b in pairs:
            batch.delete(edge_key(a, b))
            deleted += 1
    return deleted
