"""The real-time path on the project's Apache HBase, not only on the embedded gateway: the live
job's behaviours (an event read from another id of its person, new ids, ids found by lookup,
each event counted once across a replay, a kill -9 half-way through a batch), the commands
(``profiles stream live-profiles``, ``profiles profile``, ``profiles serve``) and the collector
taking events that a read of another id then shows. The same tests as on the gateway, run here
on a real region server behind its Thrift server, which production points the same code at."""

from __future__ import annotations

from collections.abc import Iterator

import happybase
import pytest
import test_live_demo
from test_live_profiles import (  # noqa: F401  (fixtures and tests, collected here again)
    connection,
    job_for,
    reader,
    table_name,
    test_a_person_merged_between_batches_gets_both_ids_events_on_every_row,
    test_an_event_is_visible_in_a_read_of_another_id_of_the_same_person,
    test_an_id_never_seen_gets_a_row_of_its_own_and_no_other_row_changes,
    test_an_unseen_id_whose_login_names_a_person_joins_that_persons_rows,
    test_kill_9_half_way_through_a_batchs_puts_loses_and_repeats_no_event,
    test_profiles_stream_live_profiles_feeds_the_cli_and_http_reads_until_sigterm,
    test_reading_the_whole_topic_again_changes_no_cell,
    test_reads_add_live_cells_only_for_days_the_daily_state_does_not_count,
    test_the_order_of_the_events_and_the_batches_change_no_result,
)

from profile_store.launchers.apache_hbase import ApacheHBase, temporary_hbase
from profile_store.profiles.table import PROFILE_TABLE, ensure_table


@pytest.fixture(scope="module")
def gateway() -> Iterator[ApacheHBase]:
    """The store of every test here: Apache HBase (the name is the one the tests above take)."""
    with temporary_hbase() as hbase:
        yield hbase


def test_the_collector_takes_a_purchase_that_a_read_of_another_id_shows(bus, gateway, tmp_path):
    opened = happybase.Connection(**gateway.connection_kwargs())
    ensure_table(opened, PROFILE_TABLE)
    try:
        test_live_demo.test_a_purchase_sent_for_one_id_shows_in_the_segments_of_another_id_within_the_bound(
            bus, opened, gateway, tmp_path
        )
    finally:
        opened.delete_table(PROFILE_TABLE, disable=True)
        opened.close()
