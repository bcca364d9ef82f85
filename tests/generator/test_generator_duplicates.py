import json
from collections import defaultdict


def test_duplicate_lines_are_exact_copies_near_the_configured_share(lake) -> None:
    for day in lake.summary.days:
        lines = lake.lines[day.date.isoformat()]
        copies = defaultdict(list)
        for part, line in lines:
            copies[json.loads(line)["event_id"]].append((part, line))
        duplicated = {k: v for k, v in copies.items() if len(v) > 1}
        assert len(duplicated) == day.duplicates == round(0.002 * day.events)
        assert all(len({line for _, line in v}) == 1 for v in duplicated.values())


def test_some_duplicates_land_in_another_part_file_of_the_same_day(lake) -> None:
    across_parts = 0
    for lines in lake.lines.values():
        parts = defaultdict(set)
        for part, line in lines:
            parts[json.loads(line)["event_id"]].add(part)
        across_parts += sum(len(names) > 1 for names in parts.values())
    assert across_parts > 0


def test_malformed_lines_are_not_duplicated(lake) -> None:
    malformed = lake.malformed_kinds()
    for day in lake.lines:
        ids = [record["event_id"] for record in lake.records(day)]
        assert all(ids.count(event_id) == 1 for event_id in set(ids) & set(malformed))
