"""The Great Expectations suites of a clean partition: counts for every expectation, examples of
the unexpected values for the failed ones only (fetched by a second validation of those)."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql.types import StructField, StructType

from profile_store.events.expectations import id_expectations, run_suite
from profile_store.events.schema import EVENTS_SCHEMA

AT = datetime(2026, 11, 1, 10, 0)


def event(event_id: str, id_type: str = "idfa") -> tuple:
    return (
        event_id,
        "app-1",
        f"user-{event_id}",
        id_type,
        AT,
        "open",
        None,
        None,
        None,
        None,
        None,
    )


def partition(spark, rows: list[tuple]):
    # every field nullable: a partition as read back from Parquet
    fields = [StructField(field.name, field.dataType) for field in EVENTS_SCHEMA.fields]
    return spark.createDataFrame(rows, StructType(fields))


@pytest.fixture
def clean(spark):
    return partition(spark, [event(str(i)) for i in range(50)])


def test_a_clean_partition_meets_every_expectation_with_its_counts(clean):
    outcome = run_suite(clean, "ids", id_expectations())
    assert outcome.success
    assert outcome.summary() == "all 6 expectations met"
    assert all(e["element_count"] == 50 for e in outcome.expectations), outcome.expectations
    assert all(e["unexpected_count"] == 0 for e in outcome.expectations), outcome.expectations


def test_a_met_expectation_lists_no_examples(clean):
    outcome = run_suite(clean, "ids", id_expectations())
    assert not any("partial_unexpected_list" in e for e in outcome.expectations)


def test_a_failed_expectation_is_named_with_its_count_and_examples(spark):
    rows = [event(str(i)) for i in range(50)] + [event("7"), event("60", id_type="imei")]
    outcome = run_suite(partition(spark, rows), "ids", id_expectations())
    assert not outcome.success
    assert sorted(outcome.failed) == [
        "expect_column_values_to_be_in_set",
        "expect_column_values_to_be_unique",
    ]
    by_name = {e["expectation"]: e for e in outcome.expectations}
    in_set = by_name["expect_column_values_to_be_in_set"]
    assert (in_set["unexpected_count"], in_set["partial_unexpected_list"]) == (1, ["imei"])
    unique = by_name["expect_column_values_to_be_unique"]
    assert (unique["unexpected_count"], unique["partial_unexpected_list"]) == (2, ["7", "7"])
    assert "1 of 52 rows unexpected, e.g. ['imei']" in outcome.summary()


def test_the_met_expectations_of_a_failed_suite_keep_their_counts(spark):
    rows = [event(str(i)) for i in range(50)] + [event("60", id_type="imei")]
    outcome = run_suite(partition(spark, rows), "ids", id_expectations())
    met = [e for e in outcome.expectations if e["success"]]
    assert len(met) == 5
    assert all((e["element_count"], e["unexpected_count"]) == (51, 0) for e in met), met
