"""Writes through happybase (put, delete, batch): deletes, masking, batch order, atomicity."""

from __future__ import annotations

import happybase
import pytest
from Hbase_thrift import IOError
from thriftpy2.thrift import TApplicationException


def test_put_stores_every_column(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"other:b": b"2"})
    assert table.row(b"r") == {b"cf:a": b"1", b"other:b": b"2"}


def test_put_with_empty_value_stores_an_empty_cell(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b""})
    assert table.row(b"r") == {b"cf:a": b""}


def test_put_to_an_unknown_family_is_an_io_error(table: happybase.Table) -> None:
    with pytest.raises(IOError, match="NoSuchColumnFamilyException"):
        table.put(b"r", {b"nope:a": b"1"})


def internal_error(call) -> bytes:
    """The message of the TApplicationException ``call`` raises (HBase: an uncaught exception)."""
    with pytest.raises(TApplicationException) as raised:
        call()
    assert raised.value.type == TApplicationException.INTERNAL_ERROR
    return raised.value.message


def test_put_to_a_bare_family_is_an_internal_error(table: happybase.Table) -> None:
    message = internal_error(lambda: table.put(b"r", {b"cf": b"1"}))
    assert message.startswith(b"Internal error processing mutateRows: ")
    assert b"Invalid famAndQf" in message


def test_empty_row_key_is_an_internal_error(table: happybase.Table) -> None:
    assert b"Row length is 0" in internal_error(lambda: table.put(b"", {b"cf:a": b"1"}))


def test_negative_timestamp_is_an_internal_error(table: happybase.Table) -> None:
    message = internal_error(lambda: table.put(b"r", {b"cf:a": b"1"}, timestamp=-1))
    assert b"Timestamp cannot be negative" in message


def test_a_malformed_batch_writes_nothing(table: happybase.Table) -> None:
    with pytest.raises(TApplicationException), table.batch() as batch:
        batch.put(b"a", {b"cf:x": b"1"})
        batch.put(b"", {b"cf:x": b"2"})
    assert table.row(b"a") == {}


def test_a_batch_row_naming_a_missing_family_fails_alone(table: happybase.Table) -> None:
    failed = pytest.raises(IOError, match="Failed 1 action: .*NoSuchColumnFamilyException")
    with failed, table.batch() as batch:
        batch.put(b"a", {b"cf:x": b"1"})
        batch.put(b"b", {b"nope:x": b"2", b"cf:x": b"2"})
        batch.put(b"c", {b"cf:x": b"3"})
    assert dict(table.scan()) == {b"a": {b"cf:x": b"1"}, b"c": {b"cf:x": b"3"}}


def test_failed_puts_leave_the_batch_deletes_unapplied(table: happybase.Table) -> None:
    table.put(b"d", {b"cf:x": b"kept"})
    failed = pytest.raises(IOError, match="RetriesExhaustedWithDetailsException")
    with failed, table.batch() as batch:
        batch.put(b"b", {b"nope:x": b"2"})
        batch.delete(b"d")
    assert table.row(b"d") == {b"cf:x": b"kept"}


def test_delete_row_removes_all_families(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"other:b": b"2"})
    table.delete(b"r")
    assert table.row(b"r") == {}


def test_delete_columns_removes_only_those_columns(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1", b"cf:b": b"2", b"other:c": b"3"})
    table.delete(b"r", columns=[b"cf:a", b"other"])
    assert table.row(b"r") == {b"cf:b": b"2"}


def test_delete_removes_every_version_of_a_column(table: happybase.Table) -> None:
    for ts in (1, 2, 3):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    table.delete(b"r", columns=[b"cf:a"])
    assert table.cells(b"r", b"cf:a") == []


def test_timestamped_delete_removes_versions_at_or_before_it(table: happybase.Table) -> None:
    for ts in (10, 20, 30):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    table.delete(b"r", columns=[b"cf:a"], timestamp=20)
    assert table.cells(b"r", b"cf:a", include_timestamp=True) == [(b"v30", 30)]


def test_timestamped_row_delete_keeps_newer_cells(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"old", b"other:b": b"old"}, timestamp=10)
    table.put(b"r", {b"cf:a": b"new"}, timestamp=30)
    table.delete(b"r", timestamp=20)
    assert table.row(b"r") == {b"cf:a": b"new"}


def test_delete_marker_masks_a_later_put_with_an_older_timestamp(table: happybase.Table) -> None:
    table.delete(b"r", columns=[b"cf:a"], timestamp=100)
    table.put(b"r", {b"cf:a": b"masked"}, timestamp=50)
    table.put(b"r", {b"cf:a": b"masked-too"}, timestamp=100)
    assert table.row(b"r") == {}


def test_delete_marker_does_not_mask_newer_puts(table: happybase.Table) -> None:
    table.delete(b"r", columns=[b"cf:a"], timestamp=100)
    table.put(b"r", {b"cf:a": b"visible"}, timestamp=101)
    assert table.row(b"r") == {b"cf:a": b"visible"}


def test_family_delete_marker_masks_every_column_of_the_family(table: happybase.Table) -> None:
    table.delete(b"r", columns=[b"cf"], timestamp=100)
    table.put(b"r", {b"cf:a": b"x", b"cf:b": b"y", b"other:c": b"z"}, timestamp=50)
    assert table.row(b"r") == {b"other:c": b"z"}


def test_column_delete_marker_masks_only_its_column(table: happybase.Table) -> None:
    table.delete(b"r", columns=[b"cf:a"], timestamp=100)
    table.put(b"r", {b"cf:a": b"x", b"cf:b": b"y"}, timestamp=50)
    assert table.row(b"r") == {b"cf:b": b"y"}


def test_major_compaction_drops_delete_markers(
    connection: happybase.Connection, table: happybase.Table
) -> None:
    table.put(b"r", {b"cf:a": b"before"}, timestamp=50)
    table.delete(b"r", columns=[b"cf:a"], timestamp=100)
    connection.compact_table(table.name, major=True)
    table.put(b"r", {b"cf:a": b"after"}, timestamp=50)
    assert table.row(b"r") == {b"cf:a": b"after"}


def test_minor_compaction_keeps_delete_markers(
    connection: happybase.Connection, table: happybase.Table
) -> None:
    table.delete(b"r", columns=[b"cf:a"], timestamp=100)
    connection.compact_table(table.name, major=False)
    table.put(b"r", {b"cf:a": b"masked"}, timestamp=50)
    assert table.row(b"r") == {}


def test_batch_applies_puts_before_deletes(table: happybase.Table) -> None:
    with table.batch() as batch:
        batch.delete(b"r", columns=[b"cf:a"])
        batch.put(b"r", {b"cf:a": b"lost", b"cf:b": b"kept"})
    assert table.row(b"r") == {b"cf:b": b"kept"}


def test_batch_timestamp_applies_to_puts_and_deletes(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:old": b"x"}, timestamp=5)
    with table.batch(timestamp=7) as batch:
        batch.put(b"r", {b"cf:a": b"1"})
        batch.delete(b"r", columns=[b"cf:old"])
    assert table.row(b"r", include_timestamp=True) == {b"cf:a": (b"1", 7)}


def test_batch_spanning_many_rows_is_all_visible(table: happybase.Table) -> None:
    with table.batch() as batch:
        for i in range(500):
            batch.put(b"row%03d" % i, {b"cf:a": b"%d" % i, b"other:b": b"x"})
    assert len(list(table.scan())) == 500
    assert table.row(b"row123") == {b"cf:a": b"123", b"other:b": b"x"}


def test_batch_size_sends_in_several_calls(table: happybase.Table) -> None:
    with table.batch(batch_size=7) as batch:
        for i in range(50):
            batch.put(b"row%02d" % i, {b"cf:a": b"v"})
    assert len(list(table.scan())) == 50


def test_transaction_batch_sends_nothing_on_error(table: happybase.Table) -> None:
    with pytest.raises(ValueError), table.batch(transaction=True) as batch:
        batch.put(b"r", {b"cf:a": b"1"})
        raise ValueError("abort")
    assert table.row(b"r") == {}


def test_wal_flag_is_accepted(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:a": b"1"}, wal=False)
    assert table.row(b"r") == {b"cf:a": b"1"}


def test_excess_versions_are_hidden_before_compaction_and_gone_after(
    connection: happybase.Connection, make_table
) -> None:
    table = make_table({"cf": {"max_versions": 2}})
    for ts in (1, 2, 3, 4):
        table.put(b"r", {b"cf:a": b"v%d" % ts}, timestamp=ts)
    assert table.cells(b"r", b"cf:a", timestamp=3) == [b"v2", b"v1"]
    connection.compact_table(table.name)
    assert table.cells(b"r", b"cf:a", timestamp=3) == []
    assert table.cells(b"r", b"cf:a") == [b"v4", b"v3"]
