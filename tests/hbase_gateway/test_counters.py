"""Atomic counters: 8-byte big-endian signed cells, missing = 0, other widths rejected."""

from __future__ import annotations

import struct

import happybase
import pytest
from Hbase_thrift import IOError


def test_missing_counter_reads_as_zero(table: happybase.Table) -> None:
    assert table.counter_get(b"r", b"cf:n") == 0


def test_counter_get_initialises_the_cell(table: happybase.Table) -> None:
    table.counter_get(b"r", b"cf:n")
    assert table.row(b"r") == {b"cf:n": struct.pack(">q", 0)}


def test_increment_returns_the_new_value(table: happybase.Table) -> None:
    assert table.counter_inc(b"r", b"cf:n") == 1
    assert table.counter_inc(b"r", b"cf:n", value=41) == 42


def test_decrement_goes_below_zero(table: happybase.Table) -> None:
    assert table.counter_dec(b"r", b"cf:n", value=5) == -5
    assert table.row(b"r")[b"cf:n"] == struct.pack(">q", -5)


def test_counter_is_stored_as_eight_byte_big_endian(table: happybase.Table) -> None:
    table.counter_inc(b"r", b"cf:n", value=258)
    assert table.row(b"r")[b"cf:n"] == b"\x00\x00\x00\x00\x00\x00\x01\x02"


def test_counter_set_then_increment(table: happybase.Table) -> None:
    table.counter_set(b"r", b"cf:n", 100)
    assert table.counter_inc(b"r", b"cf:n", value=-1) == 99


def test_incrementing_a_cell_of_another_width_is_an_io_error(table: happybase.Table) -> None:
    table.put(b"r", {b"cf:n": b"abc"})
    with pytest.raises(IOError, match="Field is not a long, it's 3 bytes wide"):
        table.counter_inc(b"r", b"cf:n")
    assert table.row(b"r") == {b"cf:n": b"abc"}


def test_counter_on_a_bare_family_uses_the_empty_qualifier(table: happybase.Table) -> None:
    table.counter_inc(b"r", b"cf", value=3)
    assert table.row(b"r") == {b"cf:": struct.pack(">q", 3)}


def test_counter_overflow_wraps_like_a_java_long(table: happybase.Table) -> None:
    table.counter_set(b"r", b"cf:n", 2**63 - 1)
    assert table.counter_inc(b"r", b"cf:n") == -(2**63)


def test_counter_on_an_unknown_family_is_an_io_error(table: happybase.Table) -> None:
    with pytest.raises(IOError, match="NoSuchColumnFamilyException"):
        table.counter_inc(b"r", b"nope:n")


def test_increment_after_a_future_timestamped_value_stays_newest(table: happybase.Table) -> None:
    future = 2**50
    table.counter_set(b"r", b"cf:n", 10)
    table.put(b"r", {b"cf:n": struct.pack(">q", 20)}, timestamp=future)
    assert table.counter_inc(b"r", b"cf:n") == 21
    assert table.counter_get(b"r", b"cf:n") == 21
