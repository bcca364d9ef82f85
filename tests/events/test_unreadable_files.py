"""A truncated or undecodable landing file quarantines itself, not the day."""

from __future__ import annotations

import gzip
import json
import zlib

import pyarrow.parquet as pq
import pytest
from test_ingest import DAY, event

from profile_store.events.ingest import ingest_day
from profile_store.events.unreadable_files import TRUNCATED, UNDECODABLE, gzip_problem
from profile_store.lake.layout import landing_day
from profile_store.lake.storage import LocalLakeStorage

GOOD_FILES = 3
ROWS_PER_FILE = 200


def gz_lines(prefix: str, count: int) -> bytes:
    text = "".join(json.dumps(event(f"{prefix}-{i}")) + "\n" for i in range(count))
    return gzip.compress(text.encode())


@pytest.fixture
def landing(tmp_path):
    day_dir = tmp_path / landing_day(DAY)
    day_dir.mkdir(parents=True)
    for index in range(GOOD_FILES):
        (day_dir / f"part-{index:05d}.jsonl.gz").write_bytes(gz_lines(f"g{index}", ROWS_PER_FILE))
    return tmp_path, day_dir


def test_complete_gzip_of_several_members_is_readable():
    assert gzip_problem(gz_lines("a", 5) + gz_lines("b", 5)) is None


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (gz_lines("t", 500)[:-20], TRUNCATED),
        (gz_lines("t", 500)[:100], TRUNCATED),
        (b"", TRUNCATED),
        (gz_lines("a", 5) + gz_lines("b", 5)[:30], TRUNCATED),
        (b"{not gzip at all}\n", UNDECODABLE),
        (gz_lines("c", 50)[:40] + b"\xff" * 64 + gz_lines("c", 50)[104:], UNDECODABLE),
    ],
    ids=["cut-near-end", "cut-early", "empty", "second-member-cut", "not-gzip", "corrupt-block"],
)
def test_a_damaged_gzip_is_named_with_its_reason(content, reason):
    found, detail = gzip_problem(content)
    assert found == reason and detail


def test_a_gzip_with_a_wrong_checksum_is_undecodable():
    good = bytearray(gz_lines("x", 20))
    good[-8] ^= 0xFF  # the CRC-32 of the member's data
    with pytest.raises(zlib.error):
        zlib.decompress(bytes(good), wbits=31)
    assert gzip_problem(bytes(good))[0] == UNDECODABLE


def test_a_truncated_file_leaves_the_other_files_of_the_day_ingested(spark, landing):
    root, day_dir = landing
    truncated = gz_lines("cut", ROWS_PER_FILE)
    (day_dir / "part-00009.jsonl.gz").write_bytes(truncated[: len(truncated) // 2])
    summary = ingest_day(spark, LocalLakeStorage(root), DAY)
    assert summary.clean_rows == GOOD_FILES * ROWS_PER_FILE
    assert summary.quarantined_rows == 0
    ((path, reason, size),) = [(p.path, p.reason, p.bytes) for p in summary.unreadable_files]
    assert path.endswith("part-00009.jsonl.gz") and reason == TRUNCATED
    assert size == len(truncated) // 2


def test_no_row_of_a_truncated_file_is_kept(spark, landing):
    """The readable prefix is dropped with the file: the sender re-delivers the whole batch."""
    root, day_dir = landing
    truncated = gz_lines("cut", ROWS_PER_FILE)
    (day_dir / "part-00009.jsonl.gz").write_bytes(truncated[: len(truncated) * 3 // 4])
    summary = ingest_day(spark, LocalLakeStorage(root), DAY)
    ids = spark.read.parquet(summary.events_uri).select("event_id").collect()
    assert not [row for row in ids if row.event_id.startswith("cut-")]


def test_the_quarantine_area_records_the_file_path_reason_and_bytes(spark, landing):
    root, day_dir = landing
    (day_dir / "part-00009.jsonl.gz").write_bytes(b"this is not gzip")
    summary = ingest_day(spark, LocalLakeStorage(root), DAY)
    records = pq.read_table(summary.quarantine_uri).to_pylist()
    (record,) = [r for r in records if r["file_bytes"] is not None]
    assert record["reason"] == UNDECODABLE
    assert record["source_file"].endswith(f"{landing_day(DAY)}/part-00009.jsonl.gz")
    assert record["file_bytes"] == len(b"this is not gzip")
    assert record["event_id"] is None and record["raw"] is None


def test_a_quarantined_row_names_its_landing_file(spark, landing):
    root, day_dir = landing
    bad = json.dumps(event("bad", event_type=""))
    (day_dir / "part-00005.jsonl.gz").write_bytes(gzip.compress((bad + "\n").encode()))
    summary = ingest_day(spark, LocalLakeStorage(root), DAY)
    (record,) = pq.read_table(summary.quarantine_uri).to_pylist()
    assert record["reason"] == "empty_event_type"
    assert record["source_file"].endswith("part-00005.jsonl.gz") and record["file_bytes"] is None


def test_a_day_of_only_unreadable_files_ingests_nothing_and_records_each(spark, tmp_path):
    day_dir = tmp_path / landing_day(DAY)
    day_dir.mkdir(parents=True)
    for index in range(2):
        (day_dir / f"part-{index:05d}.jsonl.gz").write_bytes(gz_lines(f"x{index}", 50)[:60])
    summary = ingest_day(spark, LocalLakeStorage(tmp_path), DAY)
    assert summary.clean_rows == 0 and summary.received_rows == 0
    assert [p.reason for p in summary.unreadable_files] == [TRUNCATED, TRUNCATED]
    assert summary.unreadable_share == 1.0
