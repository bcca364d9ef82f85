"""A line of progress every few seconds while a long Spark action runs, for a terminal.

Spark's console progress bar is off (it garbles Dagster's logs); a command that reads a large
source reports its tasks done instead, from Spark's status tracker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession


def tasks_done(spark: SparkSession) -> tuple[int, int]:
    """Tasks completed and in all, over the stages running now."""
    tracker = spark.sparkContext.statusTracker()
    done = total = 0
    for stage_id in tracker.getActiveStageIds():
        info = tracker.getStageInfo(stage_id)
        if info is not None:
            done += info.numCompletedTasks
            total += info.numTasks
    return done, total


@contextmanager
def spark_progress(
    spark: SparkSession,
    label: str,
    every_seconds: float = 5.0,
    emit: Callable[[str], None] = lambda line: print(line, flush=True),
) -> Iterator[None]:
    """Within the block, ``label: 12/40 tasks (42 s)`` each ``every_seconds`` while it runs."""
    finished = threading.Event()
    started = time.monotonic()

    def report() -> None:
        last = None
        while not finished.wait(every_seconds):
            done, total = tasks_done(spark)
            if total and (done, total) != last:
                emit(f"  {label}: {done}/{total} tasks ({time.monotonic() - started:.0f} s)")
                last = (done, total)

    thread = threading.Thread(target=report, name=f"progress {label}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        finished.set()
        thread.join()
