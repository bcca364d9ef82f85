"""Running a Python writer over each Spark partition's rows, fed by Arrow.

Pickled ``Row`` objects converted field by field (``rdd.mapPartitions`` with ``asDict``) cost
the executors' writers more than their writes did. Arrow batches arrive columnar and
``to_pylist`` builds each row's dict in C++: structs as dicts, arrays as lists, maps as lists of
key-value pairs.

The rows are written by one task per core, not one per partition: each partition's task costs a
Python worker's turn, an Arrow stream and a connection to the store, more than a small day's
rows of a partition take to write, and a frame straight out of a union or a shuffle often has
dozens of partitions.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql import DataFrame

PartitionWriter = Callable[[Iterator[dict]], Sequence[int]]


def sum_over_partitions(
    rows: DataFrame, write: PartitionWriter, fields: Sequence[str] = ("count",)
) -> tuple[int, ...]:
    """Call ``write`` once per partition with its rows as dicts; ``write`` returns one count
    per name in ``fields``, and each count is summed over the partitions."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        totals = write(row for batch in batches for row in batch.to_pylist())
        yield pa.RecordBatch.from_pydict(
            {name: [int(total)] for name, total in zip(fields, totals, strict=True)}
        )

    cores = max(rows.sparkSession.sparkContext.defaultParallelism, 1)
    # ``coalesce`` merges partitions without a shuffle, and never adds any.
    results = (
        rows.coalesce(cores).mapInArrow(run, ", ".join(f"{name} long" for name in fields)).collect()
    )
    return tuple(sum(result[name] for result in results) for name in fields)
