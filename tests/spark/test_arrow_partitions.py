"""A writer runs once per Spark partition over that partition's rows, as plain dicts."""

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
