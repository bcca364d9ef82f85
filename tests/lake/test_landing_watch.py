"""Deciding which landing days have new complete data."""

from __future__ import annotations

import os

from profile_store.lake.landing_watch import changed_days, complete_days
from profile_store.lake.storage import LocalLakeStorage


def put(root, relative: str, data: bytes = b"x", mtime: float | None = None) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_a_day_without_a_marker_is_not_complete(tmp_path):
    put(tmp_path, "landing/date=2026-11-01/part-0.jsonl.gz")
    assert complete_days(LocalLakeStorage(tmp_path)) == {}


def test_a_marked_day_is_complete_with_its_files(tmp_path):
    put(tmp_path, "landing/date=2026-11-01/part-0.jsonl.gz", mtime=100)
    put(tmp_path, "landing/date=2026-11-01/_SUCCESS", b"", mtime=101)
    day = complete_days(LocalLakeStorage(tmp_path))["2026-11-01"]
    assert day.files == 1 and day.bytes == 1


def test_a_file_newer_than_the_marker_waits_for_the_next_marker(tmp_path):
    storage = LocalLakeStorage(tmp_path)
    put(tmp_path, "landing/date=2026-11-01/part-0.jsonl.gz", mtime=100)
    put(tmp_path, "landing/date=2026-11-01/_SUCCESS", b"", mtime=101)
    before = complete_days(storage)["2026-11-01"]
    put(tmp_path, "landing/date=2026-11-01/part-1.jsonl.gz", mtime=200)
    assert complete_days(storage)["2026-11-01"] == before
    put(tmp_path, "landing/date=2026-11-01/_SUCCESS", b"", mtime=201)
    assert complete_days(storage)["2026-11-01"].files == 2


def test_only_days_whose_files_changed_are_reported(tmp_path):
    storage = LocalLakeStorage(tmp_path)
    for day in ("2026-11-01", "2026-11-02"):
        put(tmp_path, f"landing/date={day}/part-0.jsonl.gz", mtime=100)
        put(tmp_path, f"landing/date={day}/_SUCCESS", b"", mtime=101)
    seen = {d: entry.digest for d, entry in complete_days(storage).items()}
    assert changed_days(seen, complete_days(storage)) == []
    put(tmp_path, "landing/date=2026-11-01/part-1.jsonl.gz", mtime=300)
    put(tmp_path, "landing/date=2026-11-01/_SUCCESS", b"", mtime=301)
    assert [d.day for d in changed_days(seen, complete_days(storage))] == ["2026-11-01"]


def test_markers_and_unrelated_files_are_not_data(tmp_path):
    put(tmp_path, "landing/date=2026-11-01/_SUCCESS", b"", mtime=101)
    put(tmp_path, "landing/date=2026-11-01/.part-0.tmp", mtime=100)
    put(tmp_path, "landing/README.txt", mtime=100)
    assert complete_days(LocalLakeStorage(tmp_path)) == {}
