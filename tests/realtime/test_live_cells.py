"""The live profile job's arithmetic, without a broker: what a batch of messages becomes in the
lineage cells, checked against the daily run's own Spark code, and how reads add the cells."""

from __future__ import annotations

import gzip
import json
import math
import random

import numpy as np
import pyarrow as pa
import pytest
from live_rows import message
from pyspark.sql import functions as F

from profile_store.event_bus.consumer import MessageBatch
from profile_store.events.validation import ValidationRules, check_lines, parse_event_time
from profile_store.generator.lake import generate_lake
from profile_store.profiles.counters import event_counters
from profile_store.profiles.live_cells import (
    Lineage,
    LiveCell,
    LiveCellError,
    day_end_ms,
    decode_cell,
    encode_cell,
    live_state,
    merge_counter,
    parse_qualifier,
)
from profile_store.profiles.segment_rules import DEFAULT_RULES, parse_rules, segment_hits
from profile_store.realtime.event_days import event_millis
from profile_store.realtime.live_events import parse_events
from profile_store.realtime.live_updates import lineage_updates
from profile_store.suppression.salted_digests import Suppression, digest

DAY = 86_400_000
HALF_LIFE = 7 * DAY
RULES = parse_rules(DEFAULT_RULES)
ATTRIBUTES = tuple(sorted({name for rule in RULES for name in rule.attributes}))


def batch_of(values: list[bytes], partition: int = 0, first_offset: int = 0) -> MessageBatch:
    count = len(values)
    return MessageBatch(
        np.full(count, partition, dtype=np.int32),
        np.arange(first_offset, first_offset + count, dtype=np.int64),
        np.full(count, 1_795_000_000_000, dtype=np.int64),
        pa.array([b"k"] * count, pa.binary()),
        pa.array(values, pa.binary()),
    )


def event(n: int, user: str, time: str, event_type: str = "click", **extra) -> bytes:
    return message(f"e{n}", user, time, event_type, **extra)[1]


def apply(values: list[bytes], bases=None, first_offset: int = 0) -> dict[Lineage, LiveCell]:
    events, _ = parse_events(
        batch_of(values, first_offset=first_offset), attribute_names=ATTRIBUTES
    )
    end = first_offset + len(values)
    return lineage_updates(events, bases or {}, RULES, HALF_LIFE, {0: end})


def landing_frame(spark, lines: list[bytes]):
    """Lines as ingest reads them: their bytes as a string column (invalid UTF-8 kept), and
    each line's position as ``offset``."""
    frame = spark.createDataFrame(
        [(bytearray(line), i) for i, line in enumerate(lines)], "raw binary, offset long"
    )
    return frame.select(F.col("raw").cast("string").alias("line"), "offset")


@pytest.fixture(scope="module")
def generated_lines(tmp_path_factory) -> list[bytes]:
    """One generated day of landing lines (malformed ones and duplicates included)."""
    root = tmp_path_factory.mktemp("generated")
    generate_lake(root, 1, 3000, seed=11, malformed_share=0.05)
    lines: list[bytes] = []
    for part in sorted((root / "landing").rglob("*.jsonl.gz")):
        lines += gzip.decompress(part.read_bytes()).splitlines()
    return lines


# --- the cell layout ----------------------------------------------------------------------------


def test_a_lineage_cell_reads_back_as_written_in_one_spelling():
    cell = LiveCell(
        through=41,
        version=57,
        half_life_ms=HALF_LIFE,
        segments={"clickers": 1_796_000_000_000},
        counters={"click": (2.5, 1_795_000_000_000)},
    )
    assert decode_cell(encode_cell(cell)) == cell
    reordered = LiveCell(41, 57, HALF_LIFE, dict(cell.segments), dict(cell.counters))
    assert encode_cell(reordered) == encode_cell(cell)
    lineage = Lineage("2026-11-02", 3, "cookie|with|bars")
    assert parse_qualifier(lineage.qualifier) == lineage


@pytest.mark.parametrize(
    "qualifier", [b"2026-13-01|0|x", b"2026-11-01|zero|x", b"2026-11-01|0|", b"2026-11-01|0"]
)
def test_a_qualifier_the_job_never_writes_is_refused(qualifier):
    with pytest.raises(LiveCellError):
        parse_qualifier(qualifier)


def test_a_read_ignores_the_cells_of_days_the_daily_state_already_counts():
    covered = Lineage("2026-11-01", 0, "a").qualifier
    open_day = Lineage("2026-11-02", 0, "a").qualifier
    cells = {
        covered: encode_cell(LiveCell(1, 2, HALF_LIFE, {"old": 5}, {"click": (1.0, 10)})),
        open_day: encode_cell(LiveCell(1, 2, HALF_LIFE, {"new": 7}, {"click": (2.0, 20)})),
    }
    state = live_state(cells, as_of_ms=day_end_ms("2026-11-01"))
    assert state.segments == {"new": 7}
    assert state.counters == {"click": [(2.0, 20, HALF_LIFE)]}
    assert set(live_state(cells, as_of_ms=0).segments) == {"old", "new"}


def test_counters_merge_alike_in_any_order_and_grouping():
    parts = [(1.0, 1000), (3.0, 5 * DAY), (0.5, 2 * DAY), (2.0, 5 * DAY)]
    results = []
    for order in ([0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]):
        merged = None
        for index in order:
            merged = merge_counter(merged, parts[index], HALF_LIFE)
        results.append(merged)
    left = merge_counter(merge_counter(parts[0], parts[1], HALF_LIFE), parts[2], HALF_LIFE)
    right = merge_counter(parts[0], merge_counter(parts[1], parts[2], HALF_LIFE), HALF_LIFE)
    results += [merge_counter(left, parts[3], HALF_LIFE), merge_counter(right, parts[3], HALF_LIFE)]
    for value, last in results:
        assert last == 5 * DAY
        assert value == pytest.approx(results[0][0], rel=1e-12)


# --- a batch into lineage cells -----------------------------------------------------------------


def test_a_batch_applied_again_over_its_own_cells_adds_nothing():
    values = [event(i, f"u{i % 3}", f"2026-11-02T0{i % 9}:00:00Z") for i in range(30)]
    first = apply(values)
    assert first and apply(values, bases=first) == {}


def test_events_in_any_order_and_any_batches_make_the_same_cells():
    values = [
        event(i, f"u{i % 4}", f"2026-11-0{1 + i % 2}T{i % 24:02d}:10:00Z", ("click", "buy")[i % 2])
        for i in range(60)
    ]
    in_order = apply(values)
    shuffled = list(range(60))
    random.Random(3).shuffle(shuffled)
    # One partition's offsets only grow, so a shuffled topic is other events at those offsets:
    # the same events at other positions, read in three batches.
    reordered = [values[i] for i in shuffled]
    cells: dict[Lineage, LiveCell] = {}
    for start, stop in ((0, 7), (7, 41), (41, 60)):
        cells.update(apply(reordered[start:stop], bases=cells, first_offset=start))
    assert set(cells) == set(in_order)
    for lineage, cell in in_order.items():
        other = cells[lineage]
        assert other.segments == cell.segments
        assert other.counters.keys() == cell.counters.keys()
        for name, (value, last) in cell.counters.items():
            assert other.counters[name][1] == last
            assert other.counters[name][0] == pytest.approx(value, rel=1e-12)


def test_the_segments_and_counters_are_the_daily_runs_for_the_same_events(spark, generated_lines):
    events, _ = parse_events(batch_of(generated_lines), attribute_names=ATTRIBUTES)
    cells = lineage_updates(events, {}, RULES, HALF_LIFE, {0: len(generated_lines)})
    frame = (
        check_lines(landing_frame(spark, generated_lines), None, ValidationRules())
        .where("reason is null")
        .withColumn("event_time", F.col("event_ts"))
    )
    expected_segments: dict[tuple[str, str], int] = {}
    for row in segment_hits(frame, RULES).collect():
        expected_segments[(row.profile, row.segment)] = row.expiry_ms
    as_of = day_end_ms("2026-11-01")
    expected_counters = {
        (row.profile, row.event_type): (row.value, row.last_ms)
        for row in event_counters(frame, HALF_LIFE, as_of).collect()
    }
    # The sample's "time outside the day" lines are events of other days: other lineages of the
    # same ids, merged here as the daily run's one aggregation over all of them merges them.
    live_segments: dict[tuple[str, str], int] = {}
    live_counters: dict[tuple[str, str], tuple[float, int]] = {}
    for lineage, cell in cells.items():
        for segment, expiry in cell.segments.items():
            key = (lineage.origin, segment)
            live_segments[key] = max(expiry, live_segments.get(key, expiry))
        for name, counter in cell.counters.items():
            key = (lineage.origin, name)
            live_counters[key] = merge_counter(live_counters.get(key), counter, HALF_LIFE)
    assert live_segments == expected_segments
    assert live_counters.keys() == expected_counters.keys()
    for key, (value, last) in expected_counters.items():
        assert live_counters[key][1] == last
        assert live_counters[key][0] == pytest.approx(value, rel=1e-9)


# --- which messages are events ------------------------------------------------------------------


def test_the_job_applies_exactly_the_lines_ingest_accepts(spark, generated_lines):
    events, report = parse_events(batch_of(generated_lines), attribute_names=ATTRIBUTES)
    checked = check_lines(landing_frame(spark, generated_lines), None, ValidationRules())
    accepted = {row.offset for row in checked.where("reason is null").select("offset").collect()}
    assert sum(report.rejected.values()) > 0, "the sample has malformed lines"
    assert set(events.offsets.tolist()) == accepted


def test_an_event_of_an_erased_id_is_not_applied():
    salt = "s" * 64
    suppression = Suppression(salt, frozenset({digest(salt, "gone"), digest(salt, "m-gone")}))
    values = [
        event(1, "gone", "2026-11-02T10:00:00Z"),
        event(2, "kept", "2026-11-02T10:00:00Z", member_id="m-gone"),
        event(3, "kept", "2026-11-02T10:00:00Z"),
    ]
    events, report = parse_events(batch_of(values), suppression=suppression)
    assert events.offsets.tolist() == [2] and report.suppressed == 2


def test_an_id_is_read_in_its_one_spelling():
    line = json.dumps(
        {
            "event_id": "e1",
            "app_id": "a",
            "user_id": "ab-cd",
            "id_type": "idfa",
            "event_time": "2026-11-02T10:00:00Z",
            "event_type": "click",
            "alt_ids": {"email_sha256": "ABCDEF"},
        }
    ).encode()
    events, _ = parse_events(batch_of([line]), key_types=("email_sha256",))
    assert events.origins == ["AB-CD"] and events.keys == [(("email_sha256", "abcdef"),)]


def test_event_times_are_read_exactly_as_ingest_reads_them(spark):
    times = [
        "2026-11-01T20:15:03.250Z",
        "2026-11-01T21:15:03+01:00",
        "2026-11-01T10:00:00.5Z",
        "2026-11-01T10:00:00.12z",
        "2026-11-01T10:00:00.1234Z",
        "2026-11-01T10:00:00+0100",
        "2026-11-01 10:00:00Z",
        "2026-11-01T10:00:00.000+14:00",
        "2026-11-01T10:00:00-00:00",
        "2026-11-01T10:00:00.250+01:30",
        "2026-11-01T10:00:60Z",
        "2026-11-01T24:00:00Z",
        "2026-11-31T10:00:00Z",
        "2026-02-29T10:00:00Z",
        "2028-02-29T10:00:00Z",
        "2026-11-01T10:00:00+18:00",
        "2026-11-01T10:00:00+19:00",
        "2026-11-01T10:00:00+01:60",
        " 2026-11-01T10:00:00Z",
        "yesterday",
    ]
    spark_ms = [
        row.ms
        for row in spark.createDataFrame([(t,) for t in times], "t string")
        .select(F.unix_millis(parse_event_time(F.col("t"))).alias("ms"))
        .collect()
    ]
    ours, valid = event_millis(pa.array(times))
    assert [int(ms) if ok else None for ms, ok in zip(ours, valid, strict=True)] == spark_ms
    assert sum(ms is not None for ms in spark_ms) >= 8


def test_no_event_of_a_batch_of_nothing_but_rejections():
    events, report = parse_events(batch_of([b"", b"[]", b'{"x":1}']))
    assert len(events) == 0 and sum(report.rejected.values()) == 3
    assert lineage_updates(events, {}, RULES, HALF_LIFE, {0: 3}) == {}


def test_decaying_sum_matches_the_formula():
    values = [event(i, "u", f"2026-11-02T{i:02d}:00:00Z") for i in range(5)]
    (cell,) = apply(values).values()
    value, last = cell.counters["click"]
    hours = [4 - i for i in range(5)]
    assert last == day_end_ms("2026-11-01") + 4 * 3_600_000
    assert value == pytest.approx(sum(math.pow(2.0, -h * 3_600_000 / HALF_LIFE) for h in hours))
