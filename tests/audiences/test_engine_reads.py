"""Which rows each kind of leaf reads, and in how many round trips (data set: conftest.py)."""

from __future__ import annotations

import contextlib
from datetime import date

import happybase
import pytest

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.query import QueryError
from profile_store.audiences.rowkey import built_day_rowkey
from profile_store.audiences.sketch_table import BUILT, ensure_table, write_rows


class CountingTable:
    """A real happybase table that counts the calls reaching HBase."""

    def __init__(self, table: happybase.Table) -> None:
        self.table = table
        self.calls: list[str] = []

    def rows(self, *args, **kwargs):
        self.calls.append("rows")
        return self.table.rows(*args, **kwargs)

    def scan(self, *args, **kwargs):
        self.calls.append("scan")
        return self.table.scan(*args, **kwargs)


@pytest.fixture(scope="module")
def connection(sketch_gateway):
    connection = happybase.Connection(**sketch_gateway.connection_kwargs())
    yield connection
    connection.close()


def counting_engine(connection: happybase.Connection, table_name: str = "sketches"):
    counted = CountingTable(connection.table(table_name))

    @contextlib.contextmanager
    def open_table():
        yield counted

    return AudienceEngine(open_table), counted


def purchases(**extra) -> dict:
    return {
        "app_id": "com.shop",
        "event_type": "purchase",
        "date_from": "2026-11-01",
        "date_to": "2026-11-02",
        **extra,
    }


def test_a_one_attribute_leaf_is_one_multi_get_of_marginal_rows_and_markers(connection):
    engine, counted = counting_engine(connection)
    answer = engine.estimate(purchases(attributes={"color": "red"}))
    assert answer.estimate == 20 and answer.exact
    assert counted.calls == ["rows"]
    assert answer.rows_read == 4  # two kept markers, two marginal rows


def test_a_value_absent_on_some_days_counts_those_days_as_empty(connection):
    engine, _ = counting_engine(connection)
    answer = engine.estimate(purchases(attributes={"color": "blue"}))
    assert answer.estimate == 10  # blue purchasers exist on 2026-11-01 only
    assert answer.rows_read == 3


def test_min_count_on_a_one_attribute_leaf_sums_the_marginal_counts(connection):
    engine, _ = counting_engine(connection)
    answer = engine.estimate(purchases(attributes={"color": "red"}, min_count=3))
    assert answer.estimate == 3  # u0, u2, u4: three red purchases each on 2026-11-01


def test_a_leaf_without_attributes_is_one_multi_get(connection):
    engine, counted = counting_engine(connection)
    assert engine.estimate(purchases()).estimate == 30
    assert counted.calls == ["rows"]


def test_a_trimmed_attribute_falls_back_to_the_scan_that_names_the_days(connection):
    engine, counted = counting_engine(connection)
    leaf = purchases(event_type="install", attributes={"color": "red"})
    with pytest.raises(QueryError, match="'color'.*never seen on 2026-11-01, 2026-11-02"):
        engine.estimate(leaf)
    # The marginal rows' markers, the scan, then the days around (no day of the range is
    # answerable): their aggregate rows and built-day markers.
    assert counted.calls == ["rows", "scan", "rows", "rows"]


def test_tables_written_before_marginal_rows_answer_from_the_combination_scan(
    connection, sketch_rows
):
    ensure_table(connection, "sketches_without_marginals")
    older_layout = [row for row in sketch_rows if row["row_kind"] in ("aggregate", "combination")]
    write_rows(connection.table("sketches_without_marginals"), older_layout)
    engine, counted = counting_engine(connection, "sketches_without_marginals")
    answer = engine.estimate(purchases(attributes={"color": "red"}))
    assert answer.estimate == 20 and answer.exact
    assert counted.calls == ["rows", "scan"]


def with_days_built(connection, sketch_rows, name: str, *days: date) -> None:
    """A copy of the data set in table ``name``, with built-day markers for ``days``."""
    ensure_table(connection, name)
    table = connection.table(name)
    write_rows(table, sketch_rows)
    for day in days:
        table.put(built_day_rowkey(day), {BUILT: b"2"})


def test_a_pair_without_rows_on_a_built_day_counts_zero_there(connection, sketch_rows):
    with_days_built(connection, sketch_rows, "sketches_day_2_built", date(2026, 11, 2))
    engine, counted = counting_engine(connection, "sketches_day_2_built")
    rivals = purchases(app_id="com.rival", event_type="install")
    assert engine.estimate(rivals).estimate == 10  # r0..r9 on day 1, nobody on day 2
    assert counted.calls == ["rows", "rows"]  # the aggregate rows, then the built markers


def test_an_attribute_filter_over_a_built_day_without_the_pair_needs_no_kept_attribute(
    connection, sketch_rows
):
    with_days_built(connection, sketch_rows, "sketches_day_3_built", date(2026, 11, 3))
    engine, _ = counting_engine(connection, "sketches_day_3_built")
    answer = engine.estimate(purchases(attributes={"color": "red"}, date_to="2026-11-03"))
    assert answer.estimate == 20 and answer.exact


def test_a_day_neither_built_nor_holding_the_pair_is_refused(connection):
    engine, counted = counting_engine(connection)
    rivals = purchases(app_id="com.rival", event_type="install")
    with pytest.raises(QueryError, match="com.rival/install on 2026-11-02: the day is not built"):
        engine.estimate(rivals)
    assert counted.calls == ["rows", "rows"]


def test_an_answerable_query_of_several_criteria_reads_each_leaf_once(connection):
    engine, counted = counting_engine(connection)
    funnel = {"difference": [purchases(event_type="install"), purchases()]}
    assert engine.estimate(funnel).estimate == 70
    assert counted.calls == ["rows", "rows"]  # each leaf's aggregate rows, nothing more


def test_refusing_several_criteria_reads_each_leaf_then_two_multi_gets_around_them(connection):
    engine, counted = counting_engine(connection)
    never_seen = purchases(event_type="install", attributes={"color": "red"})
    half_built = purchases(app_id="com.rival", event_type="install")
    with pytest.raises(QueryError, match="com.rival/install at .*not built"):
        engine.estimate({"intersection": [never_seen, half_built]})
    # The first leaf's markers and scan, the second's aggregate rows and built-day markers;
    # then, no day being answerable by both, the aggregate rows around every leaf's range and
    # the built-day markers of the days without them: one multi-get each, for all leaves.
    assert counted.calls == ["rows", "scan", "rows", "rows", "rows", "rows"]


@pytest.mark.parametrize("union_lg_k", [3, 27])
def test_union_size_outside_the_library_range_is_rejected(union_lg_k):
    with pytest.raises(ValueError, match="union_lg_k: must be between 4 and 26"):
        AudienceEngine(contextlib.nullcontext, union_lg_k=union_lg_k)
