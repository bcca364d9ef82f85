import json
import re
from datetime import datetime

from profile_store.generator.landing import FIELDS

TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
IPV4 = re.compile(r"^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$")


def test_every_line_is_a_json_object(lake) -> None:
    for day, lines in lake.lines.items():
        assert lines, day
        for _, line in lines:
            assert isinstance(json.loads(line), dict)


def test_well_formed_lines_follow_the_contract(lake) -> None:
    for day in lake.lines:
        for record in lake.well_formed(day):
            assert tuple(record) == FIELDS
            assert record["id_type"] in ("cookie", "idfa", "gaid")
            assert record["user_id"] and record["event_type"] and record["app_id"]
            assert TIME.match(record["event_time"]) and record["event_time"].startswith(day)
            attributes = record["event_attributes"]
            assert isinstance(attributes, dict) and len(attributes) <= 100
            assert all(isinstance(value, str) for value in attributes.values())
            assert isinstance(record["alt_ids"], dict)
            assert record["member_id"] is None or isinstance(record["member_id"], str)
            assert all(int(octet) < 256 for octet in IPV4.match(record["ip"]).groups())
            assert record["user_agent"]


def test_free_text_attributes_survive_json_escaping(lake) -> None:
    queries = [
        record["event_attributes"]["search_query"]
        for day in lake.lines
        for record in lake.well_formed(day)
        if "search_query" in record["event_attributes"]
    ]
    text = " ".join(queries)
    assert '"quoted"' in text and "back\\slash" in text and "\t" in text and "東京" in text


def test_event_times_spread_over_the_day_with_a_diurnal_curve(lake) -> None:
    hours = [0] * 24
    for record in lake.well_formed("2026-11-01"):
        hours[datetime.fromisoformat(record["event_time"]).hour] += 1
    assert min(hours) > 0
    assert max(hours) > 2.5 * min(hours)


def test_each_day_has_parts_and_an_empty_success_marker_written_last(lake) -> None:
    day_dirs = sorted((lake.root / "landing").iterdir())
    assert [d.name for d in day_dirs] == [f"date={day}" for day in lake.lines]
    assert len(day_dirs) == lake.days
    for day_dir in day_dirs:
        parts = sorted(day_dir.glob("part-*.jsonl.gz"))
        assert len(parts) == round(lake.events_per_day * 1.002 / lake.events_per_part)
        marker = day_dir / "_SUCCESS"
        assert marker.read_bytes() == b""
        assert marker.stat().st_mtime_ns >= max(part.stat().st_mtime_ns for part in parts)
        assert sorted(path.name for path in day_dir.iterdir()) == sorted(
            [part.name for part in parts] + ["_SUCCESS"]
        )


def test_events_per_day_match_the_request(lake) -> None:
    for day in lake.summary.days:
        assert day.events == lake.events_per_day
        assert day.lines == day.events + day.duplicates == len(lake.lines[day.date.isoformat()])
