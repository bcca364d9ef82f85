import json
from datetime import datetime

import numpy as np
import pyarrow as pa

from profile_store.generator.malformed import KINDS, corrupt

ISO = "%Y-%m-%dT%H:%M:%S.%fZ"


def test_malformed_share_is_near_the_configured_one_and_every_kind_is_present(lake) -> None:
    for day in lake.summary.days:
        assert day.malformed == round(lake.malformed_share * lake.events_per_day)
        assert set(day.malformed_by_kind) == set(KINDS)
        assert min(day.malformed_by_kind.values()) >= 1
    assert set(lake.malformed_kinds().values()) == set(KINDS)


def test_each_malformed_line_shows_its_defect(lake) -> None:
    kinds = lake.malformed_kinds()
    seen = set()
    for day in lake.lines:
        for record in lake.records(day):
            kind = kinds.get(record["event_id"])
            if kind is None:
                continue
            seen.add(kind)
            if kind == "missing_user_id":
                assert record.get("user_id", "") == ""
            elif kind == "unparseable_time":
                assert not _parses(record["event_time"])
            elif kind == "time_outside_day":
                assert _parses(record["event_time"])
                assert not record["event_time"].startswith(day)
            elif kind == "wrong_types":
                shapes = (record["event_attributes"], record["alt_ids"])
                assert sum(not isinstance(value, dict) for value in shapes) == 1
            elif kind == "empty_event_type":
                assert record["event_type"] == ""
            elif kind == "oversized_attributes":
                assert len(record["event_attributes"]) > 100
    assert seen == set(KINDS)


def test_wrong_types_replace_objects_by_lists_strings_or_numbers() -> None:
    n = 600
    fragments = {
        field: pa.array([f'"{field}":{value}'] * n, type=pa.string())
        for field, value in (
            ("user_id", '"u"'),
            ("event_time", '"2026-11-01T00:00:00.000Z"'),
            ("event_type", '"click"'),
            ("event_attributes", "{}"),
            ("alt_ids", "{}"),
        )
    }
    out, kind = corrupt(fragments, np.full(n, 1_793_491_200_000), 1.0, np.random.default_rng(0))
    shapes = set()
    for row in np.flatnonzero(kind == KINDS.index("wrong_types")).tolist():
        for field in ("event_attributes", "alt_ids"):
            value = json.loads("{" + out[field][row].as_py() + "}")[field]
            if not isinstance(value, dict):
                shapes.add((field, type(value).__name__))
    assert shapes == {
        ("event_attributes", "list"),
        ("event_attributes", "str"),
        ("alt_ids", "int"),
        ("alt_ids", "list"),
    }


def _parses(text: str) -> bool:
    try:
        datetime.strptime(text, ISO)
    except ValueError:
        return False
    return True
