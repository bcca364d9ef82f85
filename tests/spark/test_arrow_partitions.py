"""A writer runs over a Spark partition's rows as plain dicts, in one task per core at most."""

from __future__ import annotations

from profile_store.spark.arrow_partitions import sum_over_partitions


def test_counts_of_every_partition_are_summed(spark) -> None:
    frame = spark.createDataFrame(
        [(i, {"age": i}) for i in range(10)], "id int, person struct<age: int>"
    ).repartition(3)

    def rows_and_ages(rows) -> tuple[int, int]:  # nested: pickled by value for the executors
        seen = list(rows)
        return len(seen), sum(row["person"]["age"] for row in seen)

    assert sum_over_partitions(frame, rows_and_ages, ("rows", "ages")) == (10, 45)


def test_rows_arrive_with_structs_as_dicts_and_maps_as_key_value_pairs(spark) -> None:
    frame = spark.createDataFrame(
        [({"age": 7}, {"a": 1}, ["x", "y"])],
        "person struct<age: int>, scores map<string, int>, tags array<string>",
    )
    expected = {"person": {"age": 7}, "scores": [("a", 1)], "tags": ["x", "y"]}

    def matching(rows) -> tuple[int]:
        return (sum(row == expected for row in rows),)

    assert sum_over_partitions(frame, matching) == (1,)


def test_a_frame_of_many_partitions_is_written_by_one_call_per_core_at_most(spark) -> None:
    cores = spark.sparkContext.defaultParallelism
    frame = spark.range(100).repartition(10 * cores)

    def one_call(rows) -> tuple[int, int]:
        return 1, sum(1 for _ in rows)

    calls, rows = sum_over_partitions(frame, one_call, ("calls", "rows"))
    assert (calls, rows) == (cores, 100)
