"""What ``identity_edges`` records of a day (``build_day_edges``' summary), counted exactly."""

from __future__ import annotations

from datetime import date, datetime

from profile_store.events.schema import EVENTS_SCHEMA
from profile_store.identity.pipeline import build_day_edges
from profile_store.identity.rules import RULE_MEMBER_ID, BridgingRules
from profile_store.identity.super_nodes import REASON_BLOCKLIST, REASON_SUPER_NODE
from profile_store.lake.layout import events_day
from profile_store.lake.storage import LocalLakeStorage

DAY = date(2026, 11, 1)
AT = datetime(2026, 11, 1, 9, 30)


def event(n: int, user: str, member: str | None = None) -> tuple:
    return (f"e{n}", "app", user, "cookie", AT, "open", None, member, None, None, None)


def test_the_summary_counts_each_profile_of_the_day_once(spark, tmp_path):
    # Three profiles over five events: d1 and d2 share a login, d3 has none.
    rows = [
        event(1, "d1", "ann"),
        event(2, "d1", "ann"),
        event(3, "d2", "ann"),
        event(4, "d3"),
        event(5, "d3"),
    ]
    storage = LocalLakeStorage(tmp_path)
    spark.createDataFrame(rows, EVENTS_SCHEMA).write.parquet(storage.spark_uri(events_day(DAY)))
    summary = build_day_edges(spark, storage, DAY, BridgingRules())
    assert summary.profiles == 3
    assert summary.edges == 1


def test_the_summary_counts_edges_by_rule_and_quarantined_keys_by_reason(spark, tmp_path):
    # "ann" links d1-d2; "unknown" is a placeholder; "crowd" is shared by three profiles,
    # over the limit of two.
    rows = [
        event(1, "d1", "ann"),
        event(2, "d2", "ann"),
        event(3, "d3", "unknown"),
        event(4, "d4", "unknown"),
        event(5, "d5", "crowd"),
        event(6, "d6", "crowd"),
        event(7, "d7", "crowd"),
    ]
    storage = LocalLakeStorage(tmp_path)
    spark.createDataFrame(rows, EVENTS_SCHEMA).write.parquet(storage.spark_uri(events_day(DAY)))
    summary = build_day_edges(spark, storage, DAY, BridgingRules(max_profiles_per_key=2))
    assert summary.edges_by_rule == {RULE_MEMBER_ID: 1}
    assert summary.quarantined_by_reason == {REASON_BLOCKLIST: 1, REASON_SUPER_NODE: 1}
    assert summary.quarantined_keys == 2
    assert summary.revoking_keys == 0  # neither key linked anything before the day
    assert [key["key"] for key in summary.top_quarantined] == ["crowd", "unknown"]
