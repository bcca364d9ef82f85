"""The mapping file: what it accepts, and errors that name the key at fault."""

from __future__ import annotations

import json

import pytest

from profile_store.imports.mapping import (
    EventTime,
    FieldSource,
    MappingError,
    load_mapping,
    parse_mapping,
)

MINIMAL = {
    "app_id": "app",
    "event_type": {"value": "click"},
    "user_id": "ip",
    "id_type": {"value": "cookie"},
    "event_time": "click_time",
}


def test_a_string_is_a_column_and_value_is_a_constant():
    mapping = parse_mapping(MINIMAL)
    assert mapping.app_id == FieldSource(column="app")
    assert mapping.event_type == FieldSource(value="click")
    assert mapping.event_time == EventTime(column="click_time", format="iso8601", time_zone="UTC")


def test_attributes_as_a_list_are_named_after_their_columns():
    mapping = parse_mapping({**MINIMAL, "attributes": ["os", "device"]})
    assert mapping.attributes == {"os": "os", "device": "device"}


def test_attributes_as_a_map_rename_columns():
    mapping = parse_mapping({**MINIMAL, "attributes": {"platform": "os"}})
    assert mapping.attributes == {"platform": "os"}


def test_columns_lists_every_source_column_once():
    mapping = parse_mapping({**MINIMAL, "attributes": ["app", "os"], "ip": "ip"})
    assert mapping.columns() == ["app", "ip", "click_time", "os"]


def test_a_missing_required_field_is_named():
    spec = {k: v for k, v in MINIMAL.items() if k != "user_id"}
    with pytest.raises(MappingError, match=r"^user_id: required"):
        parse_mapping(spec)


def test_an_unknown_key_is_named():
    with pytest.raises(MappingError, match=r"^user: not a mapping key"):
        parse_mapping({**MINIMAL, "user": "ip"})


def test_an_unknown_nested_key_is_named_with_its_parent():
    with pytest.raises(MappingError, match=r"^event_time\.zone: not a mapping key"):
        parse_mapping({**MINIMAL, "event_time": {"column": "t", "zone": "UTC"}})


def test_a_constant_id_type_must_be_a_contract_id_type():
    with pytest.raises(MappingError, match=r"^id_type\.value: 'email' is not one of"):
        parse_mapping({**MINIMAL, "id_type": {"value": "email"}})


def test_a_field_with_both_column_and_value_is_refused():
    with pytest.raises(MappingError, match=r"^app_id: give exactly one of column or value"):
        parse_mapping({**MINIMAL, "app_id": {"column": "app", "value": "x"}})


def test_an_unknown_time_zone_is_refused_by_name():
    with pytest.raises(MappingError, match=r"^event_time\.time_zone: 'Mars/Olympus'"):
        parse_mapping({**MINIMAL, "event_time": {"column": "t", "time_zone": "Mars/Olympus"}})


def test_an_offset_is_a_time_zone():
    mapping = parse_mapping({**MINIMAL, "event_time": {"column": "t", "time_zone": "+08:00"}})
    assert mapping.event_time.time_zone == "+08:00"


def test_an_unknown_source_format_is_refused():
    with pytest.raises(MappingError, match=r"^source\.format: 'xlsx' is not one of"):
        parse_mapping({**MINIMAL, "source": {"format": "xlsx"}})


def test_a_source_column_the_mapping_names_must_exist():
    mapping = parse_mapping(MINIMAL)
    with pytest.raises(MappingError, match=r"'click_time': not in the source"):
        mapping.check_columns(["app", "ip", "time"])


def test_yaml_and_json_files_give_the_same_mapping(tmp_path):
    (tmp_path / "m.json").write_text(json.dumps(MINIMAL))
    (tmp_path / "m.yaml").write_text(
        "app_id: app\nevent_type: {value: click}\nuser_id: ip\n"
        "id_type: {value: cookie}\nevent_time: click_time\n"
    )
    assert load_mapping(tmp_path / "m.json") == load_mapping(tmp_path / "m.yaml")


def test_an_unreadable_mapping_file_names_the_file(tmp_path):
    (tmp_path / "m.yaml").write_text("app_id: [unclosed\n")
    with pytest.raises(MappingError, match=r"m\.yaml: not valid yaml"):
        load_mapping(tmp_path / "m.yaml")
