"""Profile rows in bulk: the store adopts Spark's cell files with the outcome of Thrift puts."""

from __future__ import annotations

import happybase
import pytest
from bulk_profile_rows import (
    DAY,
    DAY_2,
    DAY_3,
    HALF_LIFE,
    bulk_writer,
    every_cell,
    frame,
    thrift_writer,
    write_the_days,
)

from profile_store.hbase_gateway.bulk_staging import STAGING_PREFIX
from profile_store.hbase_gateway.errors import GatewayIOError
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.profiles.bulk_profiles import counter_values, load_profiles, profile_cell_frame
from profile_store.profiles.profile_writer import profile_row
from profile_store.profiles.table import PROFILE_TABLE, ensure_table, profile_cells, profile_key


@pytest.fixture
def gateway_table(tmp_path):
    def open_table(name: str):
        gateway = EmbeddedGateway(tmp_path / name).__enter__()
        connection = happybase.Connection(**gateway.connection_kwargs())
        ensure_table(connection)
        opened.append((gateway, connection))
        return tmp_path / name, connection.table(PROFILE_TABLE)

    opened: list = []
    yield open_table
    for gateway, connection in opened:
        connection.close()
        gateway.__exit__(None, None, None)


@pytest.mark.parametrize("rows", [DAY_2, DAY_3], ids=["day 2", "day 3"])
def test_spark_computes_the_cells_of_every_row_byte_for_byte(spark, rows) -> None:
    cells = counter_values(profile_cell_frame(frame(spark, rows), 4 * DAY).toArrow(), HALF_LIFE)
    got: dict[bytes, dict[bytes, bytes]] = {}
    for cell in cells.to_pylist():
        column = cell["family"].encode() + b":" + cell["qualifier"]
        got.setdefault(cell["row"], {})[column] = cell["value"]
    expected: dict[bytes, dict[bytes, bytes]] = {}
    for row in rows:
        pairs = {
            **row,
            "segments": list(row["segments"].items()),
            "counters": list((row["counters"] or {}).items()),
        }
        parsed = profile_row(pairs, HALF_LIFE, 4 * DAY)
        expected[profile_key(parsed.profile)] = profile_cells(parsed)
    assert got == expected


def test_a_bulk_load_leaves_the_table_a_thrift_write_leaves(spark, gateway_table) -> None:
    _, by_thrift = gateway_table("thrift")
    bulk_dir, by_bulk = gateway_table("bulk")
    thrift_results = write_the_days(spark, by_thrift, thrift_writer(by_thrift))
    bulk_results = write_the_days(spark, by_bulk, bulk_writer(bulk_dir))
    assert bulk_results == thrift_results
    assert every_cell(by_bulk) == every_cell(by_thrift)


def test_a_bulk_load_deletes_dropped_segments_and_keeps_live_cells(spark, gateway_table) -> None:
    bulk_dir, table = gateway_table("bulk")
    write_the_days(spark, table, bulk_writer(bulk_dir))
    row = table.row(b"p|gaid-a")
    assert b"g:shoppers" not in row and b"f:purchase" not in row
    assert row[b"g:buyers"] == str(41 * DAY).encode()
    assert row[b"u:20000|0|7"] == b"live" and b"u:vip" in row
    assert b"s:master" not in table.row(b"p|idfa-C")


def test_a_row_of_a_later_day_is_left_alone_by_a_bulk_load(spark, gateway_table) -> None:
    bulk_dir, table = gateway_table("bulk")
    results = write_the_days(spark, table, bulk_writer(bulk_dir))
    assert results[-1] == (len(DAY_3), 8)
    row = table.row(b"p|gaid-\xc3\xa9", include_timestamp=True)
    assert row[b"s:as_of"] == (str(5 * DAY).encode(), 1_800_000_050_000)
    assert row[b"g:sport_fans"][0] == str(14 * DAY).encode()


def test_a_bulk_load_removes_its_staging_directory(spark, gateway_table) -> None:
    bulk_dir, table = gateway_table("bulk")
    write_the_days(spark, table, bulk_writer(bulk_dir))
    assert not list(bulk_dir.glob(f"{STAGING_PREFIX}*"))


def test_a_bulk_load_into_a_missing_table_fails_naming_it(spark, tmp_path) -> None:
    staging = tmp_path / "cells"
    profile_cell_frame(frame(spark, DAY_2), 3 * DAY).write.parquet(staging.as_uri())
    files = sorted(staging.glob("*.parquet"))
    with pytest.raises(GatewayIOError, match="no_such_table"):
        load_profiles(tmp_path / "store", "no_such_table", files, HALF_LIFE, 1)
