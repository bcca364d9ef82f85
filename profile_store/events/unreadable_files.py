"""Landing files that cannot be read to their end, found before Spark reads the day.

Spark's JSON reader fails the whole job on one truncated or corrupt ``.gz`` file
(``FAILED_READ_FILE ... EOFException``), so every gzip file of a day is decompressed once, in the
executors, and only the intact ones are read. An unreadable file is quarantined whole: the rows
before the damage of a truncated file are not kept, because a sender re-delivers such a batch
complete, and a partial batch would make the day's numbers depend on where the cut fell.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from pyspark.sql import SparkSession

from profile_store.lake.storage import LakeFile

TRUNCATED = "truncated_file"
UNDECODABLE = "undecodable_file"
FILE_REASONS = (TRUNCATED, UNDECODABLE)
_CHUNK = 1 << 20


@dataclass(frozen=True)
class UnreadableFile:
    """A landing file left out of the day: its lake path, why, and its size."""

    path: str
    reason: str  # one of FILE_REASONS
    detail: str
    bytes: int


def gzip_problem(content: bytes) -> tuple[str, str] | None:
    """``(reason, detail)`` if ``content`` is not complete gzip data (every member), else None."""
    if not content:
        return TRUNCATED, "empty file: no gzip header"
    data = memoryview(content)
    members = 0
    while data:
        stream = zlib.decompressobj(wbits=31)
        try:
            for start in range(0, len(data), _CHUNK):
                stream.decompress(data[start : start + _CHUNK])
                if stream.eof:
                    break
        except zlib.error as error:
            return UNDECODABLE, f"gzip member {members + 1}: {error}"
        if not stream.eof:
            return TRUNCATED, f"gzip member {members + 1} ends before its end-of-stream marker"
        members += 1
        data = memoryview(stream.unused_data)
    return None


def unreadable_files(
    spark: SparkSession, files: list[LakeFile], uris: list[str]
) -> list[UnreadableFile]:
    """The gzip files among ``files`` (at ``uris``) that do not decompress to their end.

    One Spark job, one task per file: the check runs where the data is, on any filesystem
    Spark reads. Uncompressed files need no check (a bad line is a bad row, quarantined alone).
    """
    compressed = [(f, uri) for f, uri in zip(files, uris, strict=True) if uri.endswith(".gz")]
    if not compressed:
        return []
    found = (
        spark.sparkContext.binaryFiles(
            ",".join(uri for _, uri in compressed), minPartitions=len(compressed)
        )
        .map(lambda pair: (pair[0], gzip_problem(pair[1])))
        .filter(lambda pair: pair[1] is not None)
        .collect()
    )
    problems = []
    for read_path, problem in found:
        if problem is None:  # filtered out above
            continue
        reason, detail = problem
        lake_file = next(f for f, _ in compressed if read_path.endswith(f.path))
        problems.append(UnreadableFile(lake_file.path, reason, detail, lake_file.size))
    return sorted(problems, key=lambda problem: problem.path)
