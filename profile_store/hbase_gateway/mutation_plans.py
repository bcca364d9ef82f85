"""What a write call will change, worked out before anything is written: the cells to put and
the deletes to apply at one timestamp, and which rows fail, checked the way HBase's Thrift
handler checks them (so a malformed call changes nothing, and a bad row of a batch fails
alone).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from .errors import GatewayIllegalArgument, GatewayInternalError, show_bytes
from .schema import (
    LATEST_TIMESTAMP,
    MAX_ROW_LENGTH,
    StoredCell,
    TableInfo,
    check_client_row_key,
    check_row_key,
)

Mutation = tuple[bool, bytes, bytes | None]
"""``(is_delete, column, value)`` as in Thrift's ``Mutation``."""
Delete = tuple[bytes, int, bytes | None, int]
"""``(row, family id, qualifier or None for the whole family, timestamp)``."""

logger = logging.getLogger(__name__)


def write_timestamp(timestamp: int | None, now: int) -> int:
    """A write's timestamp: its own, or the server clock ``now`` (HBase's LATEST_TIMESTAMP)."""
    if timestamp is None or timestamp == LATEST_TIMESTAMP:
        return now
    if timestamp < 0:
        raise GatewayIllegalArgument(
            f"IllegalArgumentException: Timestamp cannot be negative. ts={timestamp}"
        )
    return timestamp


def check_timestamp_shape(timestamp: int | None) -> None:
    if timestamp is not None and timestamp < 0:
        raise GatewayInternalError(
            f"IllegalArgumentException: Timestamp cannot be negative. ts={timestamp}"
        )


def check_batch_shape(batches: Sequence[tuple[bytes, Sequence[Mutation]]]) -> None:
    """What HBase's handler rejects while building its Put and Delete objects (uncaught)."""
    for row, mutations in batches:
        check_client_row_key(row)
        for is_delete, column, _ in mutations:
            if not is_delete and b":" not in column:
                raise _invalid_column()


def plan_batch(
    info: TableInfo, batches: Sequence[tuple[bytes, Sequence[Mutation]]], ts: int
) -> tuple[list[StoredCell], list[Delete], list[str], list[str]]:
    """One pass over a ``mutateRows`` batch: the cells to put, the deletes, and the first error
    of each row whose puts fail, and of each row whose deletes fail, in row order.

    Raises what ``check_batch_shape`` raises, before anything is written. A row naming a
    missing family contributes no put (no delete) when that family is in a put (a delete). This
    is the batch loader's hot path (hundreds of thousands of cells per call), hence one loop, no
    per-row objects, and each distinct put column split once per call.
    """
    family_index = info.family_index
    put_columns: dict[bytes, tuple[int, bytes]] = {}
    puts: list[StoredCell] = []
    put = puts.append
    deletes: list[Delete] = []
    failed: list[str] = []
    failed_deletes: list[str] = []
    for row, mutations in batches:
        if not row or len(row) > MAX_ROW_LENGTH:
            check_client_row_key(row)
        first = len(puts)
        put_error: str | None = None
        first_delete = len(deletes)
        delete_error: str | None = None
        for is_delete, column, value in mutations:
            if not is_delete:
                known = put_columns.get(column)
                if known is not None:
                    put((row, known[0], known[1], ts, value or b""))
                    continue
                family, colon, qualifier = column.partition(b":")
                if not colon:
                    raise _invalid_column()
                fam = family_index.get(family)
                if fam is None:
                    put_error = put_error or _no_family(info, family)
                    continue
                put_columns[column] = (fam, qualifier)
                put((row, fam, qualifier, ts, value or b""))
            else:
                family, colon, qualifier = column.partition(b":")
                fam = family_index.get(family)
                if fam is None:
                    delete_error = delete_error or _no_family(info, family)
                    continue
                deletes.append((row, fam, qualifier if colon else None, ts))
        if put_error is not None:
            del puts[first:]
            failed.append(put_error)
        if delete_error is not None:
            del deletes[first_delete:]
            failed_deletes.append(delete_error)
    return puts, deletes, failed, failed_deletes


def plan_batch_writes(
    info: TableInfo, batches: Sequence[tuple[bytes, Sequence[Mutation]]], ts: int
) -> tuple[list[StoredCell], list[Delete], list[str]]:
    """``mutate_batch``'s puts and deletes at ``ts``, and the rows that fail: when a row's puts
    fail, no delete is applied.
    """
    puts, deletes, failed, failed_deletes = plan_batch(info, batches, ts)
    if failed:
        return puts, [], failed
    return puts, deletes, failed_deletes


def _invalid_column() -> GatewayInternalError:
    return GatewayInternalError("IllegalArgumentException: Invalid famAndQf provided.")


def _no_family(info: TableInfo, family: bytes) -> str:
    return (
        "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: Column family "
        f"{show_bytes(family)} does not exist in table {show_bytes(info.name)}"
    )


def plan_mutations(
    info: TableInfo, batches: Sequence[tuple[bytes, Sequence[Mutation]]], ts: int
) -> tuple[list[StoredCell], list[tuple[bytes, int, bytes | None, int]]]:
    """Validate a whole batch before anything is written, so a bad mutation changes nothing.

    A put naming a family without a qualifier is left out, as HBase's single-row handler does
    (it logs "Delete is the only mutation supported over the whole column family").
    """
    family_index = info.family_index
    puts: list[StoredCell] = []
    deletes: list[tuple[bytes, int, bytes | None, int]] = []
    for row, mutations in batches:
        check_row_key(row)
        for is_delete, column, value in mutations:
            i = column.find(b":")
            if i < 0 and not is_delete:
                logger.warning(
                    "a put of %r names no qualifier: left out (only a delete can name a whole "
                    "family)",
                    show_bytes(column),
                )
                continue
            family = column if i < 0 else column[:i]
            fam = family_index.get(family)
            if fam is None:
                fam = info.family_id(family)  # raises NoSuchColumnFamily
            if i < 0:
                deletes.append((row, fam, None, ts))
            elif is_delete:
                deletes.append((row, fam, column[i + 1 :], ts))
            else:
                puts.append((row, fam, column[i + 1 :], ts, value or b""))
    return puts, deletes
