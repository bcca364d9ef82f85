"""Profile rows loaded in bulk into the gateway are the rows Thrift puts leave on Apache HBase.

The same two days of compacted rows (``bulk_profile_rows``): through ``replace_profiles`` on the
suite's Apache HBase, and as cell files the gateway's store adopts. Every cell, its value and
its timestamp, must be the same, so must the rows and stale cells each write reports.
"""

from __future__ import annotations

import itertools

import happybase
from bulk_profile_rows import bulk_writer, every_cell, thrift_writer, write_the_days

from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.profiles.table import ensure_table

_names = itertools.count()


def test_a_bulk_load_leaves_the_cells_thrift_puts_leave_on_apache_hbase(
    spark, apache_hbase, tmp_path
) -> None:
    name = f"bulk_profiles_{next(_names)}"
    apache = happybase.Connection(**apache_hbase.connection_kwargs())
    with EmbeddedGateway(tmp_path / "gateway") as gateway:
        local = happybase.Connection(**gateway.connection_kwargs())
        try:
            ensure_table(apache, name)
            ensure_table(local, name)
            on_apache = write_the_days(spark, apache.table(name), thrift_writer(apache.table(name)))
            in_bulk = write_the_days(
                spark, local.table(name), bulk_writer(tmp_path / "gateway", name)
            )
            assert in_bulk == on_apache
            apache_cells = every_cell(apache.table(name))
            assert len(apache_cells) == 6
            assert every_cell(local.table(name)) == apache_cells
        finally:
            local.close()
            apache.disable_table(name)
            apache.delete_table(name)
            apache.close()
