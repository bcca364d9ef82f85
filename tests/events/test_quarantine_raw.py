"""A quarantined line keeps a bounded prefix and its length; a cut line still names its ids."""

from __future__ import annotations

import gzip
import json
import secrets

import pyarrow.parquet as pq
import pytest
from test_ingest import DAY, event, write_landing

from profile_store.events.ingest import ingest_day
from profile_store.events.raw_lines import MAX_STRING_CHARACTERS, names_any
from profile_store.events.rules import MAX_RAW_BYTES, ValidationRules
from profile_store.events.schema import QUARANTINE_COLUMNS, QUARANTINE_SCHEMA
from profile_store.lake.layout import landing_day, quarantine_day
from profile_store.lake.storage import LocalLakeStorage

BOUND = 4096  # the default


@pytest.fixture
def storage(tmp_path):
    return LocalLakeStorage(tmp_path)


def oversized(event_id: str, attributes: int = 500, characters: int = 10_000, **fields) -> str:
    """A line over every limit: ``attributes`` values of random text (it does not compress)."""
    values = {f"a{i}": secrets.token_hex(characters // 2) for i in range(attributes)}
    return json.dumps(event(event_id, event_attributes=values, **fields))


def quarantined(storage, summary) -> list[dict]:
    return pq.read_table(summary.quarantine_uri.removeprefix("file://")).to_pylist()


def test_an_oversized_line_keeps_its_first_bytes_and_its_length(spark, storage, tmp_path):
    line = oversized("big", attributes=20)
    write_landing(tmp_path, [line])
    [row] = quarantined(storage, ingest_day(spark, storage, DAY))
    assert row["reason"] == "oversized_attributes"
    assert row["raw"] == line[:BOUND]
    assert row["raw_length"] == len(line.encode())


def test_a_line_within_the_bound_is_kept_whole(spark, storage, tmp_path):
    line = json.dumps(event("small", event_type=""))
    write_landing(tmp_path, [line])
    [row] = quarantined(storage, ingest_day(spark, storage, DAY))
    assert (row["raw"], row["raw_length"], row["raw_strings"]) == (line, len(line), None)


def test_a_cut_ends_on_a_character_boundary(spark, storage, tmp_path):
    # "é" is 2 bytes, "€" 3 and "𝄞" 4: whatever the offset, the cut never splits one.
    for offset, text in enumerate(["é" * 3000, "€" * 3000, "𝄞" * 3000]):
        line = json.dumps(event(f"c{offset}", event_type="", ip=text), ensure_ascii=False)
        write_landing(tmp_path, [line], name=f"part-{offset}.jsonl.gz")
    rows = quarantined(storage, ingest_day(spark, storage, DAY))
    for row in rows:
        kept = row["raw"].encode()
        assert BOUND - 3 <= len(kept) <= BOUND
        assert "\ufffd" not in row["raw"]
        assert row["raw_length"] > BOUND


def test_a_cut_line_that_is_not_utf8_keeps_its_first_bytes_exactly(spark, storage, tmp_path):
    line = b'{"event_id": "\xff\xfe", "ip": "' + b"x" * 10_000 + b'"}'
    path = tmp_path / landing_day(DAY) / "part-00000.jsonl.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(gzip.compress(line + b"\n"))
    [row] = quarantined(storage, ingest_day(spark, storage, DAY))
    assert row["reason"] == "malformed_record"
    assert row["raw_bytes"] == line[:BOUND]
    assert row["raw_length"] == len(line)


def test_a_cut_line_keeps_the_short_strings_past_its_prefix(spark, storage, tmp_path):
    email = "ab" * 32  # a SHA-256 hex digest
    line = oversized(
        "named",
        attributes=20,
        member_id="login-4711",
        alt_ids={"email_sha256": email},
    )
    assert line.index(email) > BOUND and line.index("login-4711") > BOUND
    write_landing(tmp_path, [line])
    [row] = quarantined(storage, ingest_day(spark, storage, DAY))
    assert {"login-4711", email, "u-named", "a19"} <= set(row["raw_strings"])
    assert max(len(s) for s in row["raw_strings"]) <= MAX_STRING_CHARACTERS
    assert len(row["raw_strings"]) == len(set(row["raw_strings"]))


def test_oversized_rows_keep_the_quarantine_small(spark, storage, tmp_path):
    lines = [oversized(f"huge-{i}", attributes=100) for i in range(3)]  # 1 MB each
    write_landing(tmp_path, lines)
    summary = ingest_day(spark, storage, DAY)
    assert summary.quarantined_by_reason == {"oversized_attributes": 3}
    written = sum(p.stat().st_size for p in (tmp_path / quarantine_day(DAY)).glob("*.parquet"))
    assert written < 64 * 1024
    assert sum(len(line) for line in lines) > 3_000_000


def test_the_kept_bytes_are_configurable(spark, storage, tmp_path):
    line = json.dumps(event("short", event_type=""))
    write_landing(tmp_path, [line])
    summary = ingest_day(spark, storage, DAY, ValidationRules(max_raw_bytes=64))
    [row] = quarantined(storage, summary)
    assert row["raw"] == line[:64] and row["raw_length"] == len(line)


@pytest.mark.parametrize("bound", [3, MAX_RAW_BYTES + 1])
def test_a_bound_outside_one_character_to_one_gib_is_refused_naming_the_field(bound):
    with pytest.raises(ValueError, match=f"max_raw_bytes: must be >= 4 .* got {bound}"):
        ValidationRules(max_raw_bytes=bound)


def test_a_bound_of_one_gib_keeps_a_line_whole(spark, storage, tmp_path):
    line = oversized("big", attributes=20)
    write_landing(tmp_path, [line])
    summary = ingest_day(spark, storage, DAY, ValidationRules(max_raw_bytes=MAX_RAW_BYTES))
    [row] = quarantined(storage, summary)
    assert (row["raw"], row["raw_strings"]) == (line, None)


def test_the_quarantine_has_the_published_columns(spark, storage, tmp_path):
    write_landing(tmp_path, [json.dumps(event("1", event_type=""))])
    summary = ingest_day(spark, storage, DAY)
    assert tuple(spark.read.parquet(summary.quarantine_uri).columns) == QUARANTINE_COLUMNS


def test_an_id_past_the_prefix_is_found_in_a_cut_line(spark, storage, tmp_path):
    email = "cd" * 32
    write_landing(
        tmp_path,
        [
            oversized("far", attributes=20, alt_ids={"email_sha256": email}),
            json.dumps(event("near", event_type="", member_id="login-9")),
            json.dumps(event("other", event_type="")),
        ],
    )
    summary = ingest_day(spark, storage, DAY)
    rows = spark.read.parquet(summary.quarantine_uri)
    named = rows.where(names_any([email, "login-9"])).select("event_id").collect()
    assert sorted(r.event_id for r in named) == ["far", "near"]


def test_partitions_written_before_the_new_columns_are_searched_by_their_raw(
    spark, storage, tmp_path
):
    old = tmp_path / "quarantine" / "date=2026-10-31"
    spark.createDataFrame(
        [("empty_event_type", '{"member_id": "login-9"}')], "reason string, raw string"
    ).write.parquet(str(old))
    write_landing(tmp_path, [oversized("far", attributes=20, member_id="login-9")])
    ingest_day(spark, storage, DAY)
    area = spark.read.schema(QUARANTINE_SCHEMA).option("basePath", str(tmp_path / "quarantine"))
    rows = area.parquet(str(tmp_path / "quarantine")).where(names_any(["login-9"]))
    assert sorted(str(r.date) for r in rows.collect()) == ["2026-10-31", str(DAY)]
