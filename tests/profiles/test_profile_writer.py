"""Writing compacted rows: a re-run of an earlier day never takes a person back in time."""

from __future__ import annotations

import happybase
import pytest

from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.profiles.profile_writer import replace_profiles
from profile_store.profiles.table import PROFILE_TABLE, ProfileRow, decode_profile, ensure_table

DAY = 86_400_000


def row(as_of_ms: int, segments: dict[str, int]) -> ProfileRow:
    return ProfileRow(
        profile="dev-1",
        id_type="gaid",
        master="dev-1",
        first_seen_ms=0,
        devices=1,
        as_of_ms=as_of_ms,
        segments=segments,
        counters={},
        associations={},
    )


@pytest.fixture
def table(tmp_path):
    with EmbeddedGateway(tmp_path) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        ensure_table(connection)
        yield connection.table(PROFILE_TABLE)
        connection.close()


def test_a_later_days_row_is_not_overwritten_by_an_earlier_day_run_afterwards(table):
    replace_profiles(table, [row(3 * DAY, {"buyers": 10 * DAY})])
    replace_profiles(table, [row(2 * DAY, {"clickers": 9 * DAY})])
    stored = decode_profile(b"p|dev-1", table.row(b"p|dev-1"))
    assert (stored.as_of_ms, stored.segments) == (3 * DAY, {"buyers": 10 * DAY})


def test_a_later_days_row_replaces_an_earlier_one(table):
    replace_profiles(table, [row(2 * DAY, {"clickers": 9 * DAY})])
    replace_profiles(table, [row(3 * DAY, {"buyers": 10 * DAY})])
    stored = decode_profile(b"p|dev-1", table.row(b"p|dev-1"))
    assert (stored.as_of_ms, stored.segments) == (3 * DAY, {"buyers": 10 * DAY})
