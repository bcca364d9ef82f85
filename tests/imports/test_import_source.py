"""``profiles import`` end to end on small sources: lines by day, the report, re-runs."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, date, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from profile_store.events.ingest import ingest_day
from profile_store.imports.mapping import parse_mapping
from profile_store.imports.source_import import import_source, next_steps
from profile_store.lake.layout import landing_day
from profile_store.lake.storage import LocalLakeStorage

CLICKS = """ip,app,device,os,channel,click_time
83230,3,1,13,379,2017-11-06 14:32:21
17357,3,1,,379,2017-11-06 14:33:34
45745,14,1,13,478,2017-11-06 14:34:52
45745,14,1,13,478,2017-11-06 14:34:52
161007,3,1,13,379,2017-11-07 03:35:46
18787,3,1,16,379,2017-11-07 14:37:44
,3,1,16,379,2017-11-07 14:37:44
103022,3,1,23,379,not a time
"""

CLICK_MAPPING = {
    "app_id": {"column": "app", "prefix": "td."},
    "event_type": {"value": "click"},
    "user_id": "ip",
    "id_type": {"value": "cookie"},
    "event_time": {
        "column": "click_time",
        "format": "yyyy-MM-dd HH:mm:ss",
        "time_zone": "Asia/Shanghai",
    },
    "attributes": ["os", "device", "channel"],
}


def landing_events(storage: LocalLakeStorage, day: str) -> list[dict]:
    events = []
    for file in storage.list_files(landing_day(day)):
        if file.path.endswith(".gz"):
            text = gzip.decompress(storage.read_bytes(file.path)).decode()
            events += [json.loads(line) for line in text.splitlines()]
    return sorted(events, key=lambda e: (e["event_time"], e["event_id"]))


def quiet(line: str) -> None:
    pass


@pytest.fixture(scope="module")
def clicks(spark, tmp_path_factory):
    """The click log imported once; tests read the lake and the result."""
    root = tmp_path_factory.mktemp("clicks")
    (root / "clicks.csv").write_text(CLICKS)
    storage = LocalLakeStorage(root / "lake")
    result = import_source(
        spark, storage, str(root / "clicks.csv"), parse_mapping(CLICK_MAPPING), emit=quiet
    )
    return storage, result


def test_each_line_lands_in_the_utc_day_of_its_time_in_the_mappings_zone(clicks):
    storage, _ = clicks
    # 2017-11-07 03:35:46 in Shanghai is 2017-11-06 19:35:46 UTC.
    times = [e["event_time"] for e in landing_events(storage, "2017-11-06")]
    assert times == [
        "2017-11-06T06:32:21.000Z",
        "2017-11-06T06:33:34.000Z",
        "2017-11-06T06:34:52.000Z",
        "2017-11-06T06:34:52.000Z",
        "2017-11-06T19:35:46.000Z",
    ]


def test_columns_and_constants_fill_the_event_fields(clicks):
    storage, _ = clicks
    first = landing_events(storage, "2017-11-06")[0]
    assert {k: v for k, v in first.items() if k != "event_id"} == {
        "app_id": "td.3",
        "user_id": "83230",
        "id_type": "cookie",
        "event_time": "2017-11-06T06:32:21.000Z",
        "event_type": "click",
        "event_attributes": {"os": "13", "device": "1", "channel": "379"},
    }


def test_an_empty_cell_is_no_attribute(clicks):
    storage, _ = clicks
    second = landing_events(storage, "2017-11-06")[1]
    assert second["event_attributes"] == {"device": "1", "channel": "379"}


def test_identical_rows_stay_distinct_events(clicks):
    storage, _ = clicks
    day = landing_events(storage, "2017-11-06")
    twins = [e["event_id"] for e in day if e["user_id"] == "45745"]
    assert len(set(twins)) == 2
    assert {twin.rsplit("-", 1)[1] for twin in twins} == {"1", "2"}


def test_derived_event_ids_are_the_same_on_a_second_import(spark, clicks, tmp_path):
    storage, _ = clicks
    (tmp_path / "clicks.csv").write_text(CLICKS)
    again = LocalLakeStorage(tmp_path / "lake")
    import_source(
        spark, again, str(tmp_path / "clicks.csv"), parse_mapping(CLICK_MAPPING), emit=quiet
    )
    for day in ("2017-11-06", "2017-11-07"):
        assert landing_events(again, day) == landing_events(storage, day)


def test_each_day_ends_with_its_success_marker(clicks):
    storage, _ = clicks
    for day in ("2017-11-06", "2017-11-07"):
        files = storage.list_files(landing_day(day))
        marker = [f for f in files if f.path.endswith("/_SUCCESS")]
        data = [f for f in files if f.path.endswith(".jsonl.gz")]
        assert marker and data
        assert marker[0].modified_ms >= max(f.modified_ms for f in data)


def test_the_report_counts_what_ingest_will_quarantine(spark, clicks):
    storage, result = clicks
    reported = {d.day: d for d in result.check.days}
    assert reported[date(2017, 11, 7)].quarantined == {"missing_user_id": 1}
    assert result.check.examples["missing_user_id"] == "user_id: missing or blank"
    summary = ingest_day(spark, storage, date(2017, 11, 7))
    assert summary.quarantined_by_reason == {"missing_user_id": 1}
    assert summary.received_rows == reported[date(2017, 11, 7)].lines == 2


def test_a_time_that_does_not_parse_is_reported_and_not_written(clicks):
    storage, result = clicks
    assert result.check.unplaced == 1
    assert result.check.unplaced_example == "not a time"
    written = [f.path for f in storage.list_files("landing") if "date=2017-11" not in f.path]
    assert written == []


def test_the_staging_area_is_gone_after_the_import(clicks):
    storage, _ = clicks
    assert not storage.exists("_imports")


def test_a_dry_run_reports_and_writes_nothing(spark, tmp_path):
    (tmp_path / "clicks.csv").write_text(CLICKS)
    storage = LocalLakeStorage(tmp_path / "lake")
    result = import_source(
        spark,
        storage,
        str(tmp_path / "clicks.csv"),
        parse_mapping(CLICK_MAPPING),
        dry_run=True,
        emit=quiet,
    )
    assert result.check.lines == 7
    assert storage.list_files("") == []


def test_a_reimport_replaces_exactly_the_days_it_writes(spark, tmp_path):
    storage = LocalLakeStorage(tmp_path / "lake")
    storage.write_bytes(f"{landing_day('2017-11-05')}/part-0.jsonl.gz", b"kept")
    storage.write_bytes(f"{landing_day('2017-11-06')}/part-0.jsonl.gz", b"replaced")
    storage.write_bytes(f"{landing_day('2017-11-06')}/_SUCCESS", b"")
    (tmp_path / "clicks.csv").write_text(CLICKS)
    result = import_source(
        spark, storage, str(tmp_path / "clicks.csv"), parse_mapping(CLICK_MAPPING), emit=quiet
    )
    assert [(d.day, d.replaced_files) for d in result.published] == [
        (date(2017, 11, 6), 1),
        (date(2017, 11, 7), 0),
    ]
    assert storage.read_bytes(f"{landing_day('2017-11-05')}/part-0.jsonl.gz") == b"kept"
    assert not storage.exists(f"{landing_day('2017-11-06')}/part-0.jsonl.gz")
    assert len(landing_events(storage, "2017-11-06")) == 5


EPOCH_MAPPING = {
    "app_id": "app",
    "event_type": "event",
    "user_id": "device",
    "id_type": "kind",
    "event_time": {"column": "ts", "format": "epoch_millis"},
}


def test_json_lines_from_a_glob_with_epoch_millis(spark, tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    rows = [
        {"app": "shop", "event": "open", "device": 7, "kind": "gaid", "ts": 1509926400000},
        {"app": "shop", "event": "buy", "device": 7, "kind": "gaid", "ts": 1510012799999},
    ]
    for index, row in enumerate(rows):
        (source / f"part-{index}.jsonl").write_text(json.dumps(row) + "\n")
    (source / "notes.txt").write_text("not matched by the glob")
    storage = LocalLakeStorage(tmp_path / "lake")
    import_source(spark, storage, str(source / "*.jsonl"), parse_mapping(EPOCH_MAPPING), emit=quiet)
    events = landing_events(storage, "2017-11-06")
    assert [(e["event_time"], e["user_id"], e["id_type"]) for e in events] == [
        ("2017-11-06T00:00:00.000Z", "7", "gaid"),
        ("2017-11-06T23:59:59.999Z", "7", "gaid"),
    ]


def test_parquet_timestamps_are_instants_and_iso_text_without_zone_is_read_in_the_zone(
    spark, tmp_path
):
    source = tmp_path / "src"
    source.mkdir()
    instant = datetime(2017, 11, 6, 23, 30, tzinfo=UTC)
    pq.write_table(
        pa.table(
            {"app": ["a"], "user": ["u1"], "at": pa.array([instant], pa.timestamp("us", "UTC"))}
        ),
        source / "part-0.parquet",
    )
    pq.write_table(
        pa.table({"app": ["a"], "user": ["u2"], "at": ["2017-11-07T01:30:00"]}),
        tmp_path / "text.parquet",
    )
    mapping = {
        "app_id": "app",
        "event_type": {"value": "visit"},
        "user_id": "user",
        "id_type": {"value": "cookie"},
        "event_time": {"column": "at", "time_zone": "+02:00"},
    }
    storage = LocalLakeStorage(tmp_path / "lake")
    for path in (source, tmp_path / "text.parquet"):
        import_source(spark, storage, str(path), parse_mapping(mapping), emit=quiet)
    # The directory's day was replaced by the second import of the same day: one line each.
    assert [e["event_time"] for e in landing_events(storage, "2017-11-06")] == [
        "2017-11-06T23:30:00.000Z"
    ]
    assert [e["user_id"] for e in landing_events(storage, "2017-11-06")] == ["u2"]


def test_days_before_the_partitions_say_which_start_date_to_set():
    days = [date(2017, 11, 6), date(2017, 11, 9)]
    lines = next_steps(days, date(2026, 11, 1), date(2026, 11, 25))
    assert "    export PROFILES_START_DATE=2017-11-06" in lines
    assert lines[-1].startswith("Then run them: profiles run 2017-11-06 2017-11-09")


def test_days_inside_the_partitions_need_no_start_date():
    lines = next_steps([date(2026, 11, 2)], date(2026, 11, 1), date(2026, 11, 25))
    assert not any("PROFILES_START_DATE" in line for line in lines)


def test_the_command_names_a_bad_mapping_key_and_exits_2(tmp_path, capsys):
    from profile_store.cli.main import main

    (tmp_path / "m.yaml").write_text("app_id: app\n")
    code = main(["import", str(tmp_path / "x.csv"), "--mapping", str(tmp_path / "m.yaml")])
    assert code == 2
    assert "event_type: required" in capsys.readouterr().err


def test_the_command_names_a_bad_start_date_and_exits_2(tmp_path, capsys, monkeypatch):
    from profile_store.cli.main import main

    monkeypatch.setenv("PROFILES_START_DATE", "Nov 1")
    (tmp_path / "m.json").write_text(json.dumps(CLICK_MAPPING))
    args = ["import", str(tmp_path / "x.csv"), "--mapping", str(tmp_path / "m.json")]
    assert main([*args, "--lake", str(tmp_path / "lake")]) == 2
    assert "PROFILES_START_DATE: expected a date as YYYY-MM-DD" in capsys.readouterr().err
    assert not (tmp_path / "lake").exists()


def test_the_command_names_a_missing_source_and_exits_2(spark, tmp_path, capsys):
    from profile_store.cli.main import main

    (tmp_path / "m.json").write_text(json.dumps(CLICK_MAPPING))
    missing = str(tmp_path / "nowhere.csv")
    args = ["import", missing, "--mapping", str(tmp_path / "m.json"), "--lake", str(tmp_path)]
    assert main(args) == 2
    assert f"{missing}: no such file or directory" in capsys.readouterr().err


def test_the_command_exits_2_when_no_time_parses_with_the_format(spark, tmp_path, capsys):
    from profile_store.cli.main import main

    (tmp_path / "clicks.csv").write_text("ip,app,click_time\n1,3,06/11/2017 14:32\n")
    mapping = {**CLICK_MAPPING, "attributes": []}
    (tmp_path / "m.json").write_text(json.dumps(mapping))
    args = ["import", str(tmp_path / "clicks.csv"), "--mapping", str(tmp_path / "m.json")]
    assert main([*args, "--lake", str(tmp_path / "lake")]) == 2
    assert "no line of" in capsys.readouterr().err
    assert not (tmp_path / "lake" / "landing").exists()


SPELLING_MAPPING = {
    "app_id": {"value": "shop"},
    "event_type": {"value": "open"},
    "user_id": "device",
    "id_type": "kind",
    "event_time": {"column": "ts", "format": "epoch_millis"},
    "alt_ids": {"email_sha256": "email", "crm_id": "crm"},
}


def test_ids_of_case_insensitive_kinds_land_in_their_one_spelling(spark, tmp_path):
    rows = [
        {"device": "AB-cd", "kind": "gaid", "email": "EF01", "crm": "Cust-7", "ts": 1509926400000},
        {"device": "ab-CD", "kind": "idfa", "email": "ef01", "crm": "Cust-7", "ts": 1509926400001},
        {"device": "Ab-Cd", "kind": "cookie", "email": None, "crm": None, "ts": 1509926400002},
    ]
    (tmp_path / "src.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    storage = LocalLakeStorage(tmp_path / "lake")
    mapping = parse_mapping(SPELLING_MAPPING)
    import_source(spark, storage, str(tmp_path / "src.jsonl"), mapping, emit=quiet)
    events = landing_events(storage, "2017-11-06")
    assert [(e["user_id"], e["alt_ids"]) for e in events] == [
        ("ab-cd", {"email_sha256": "ef01", "crm_id": "Cust-7"}),
        ("AB-CD", {"email_sha256": "ef01", "crm_id": "Cust-7"}),
        ("Ab-Cd", {}),
    ]


REGISTRY = """record,org_phone,org_address,registered
r1,+31205550001,street 1,2017-11-06 10:00:00
r2,+31205550001,street 1,2017-11-06 11:00:00
"""

REGISTRY_MAPPING = {
    "app_id": {"value": "registry"},
    "event_type": {"value": "registered"},
    "user_id": "record",
    "id_type": {"value": "cookie"},
    "event_time": {"column": "registered", "format": "yyyy-MM-dd HH:mm:ss"},
    "alt_ids": {"phone": "org_phone", "address": "org_address"},
}


def import_registry(tmp_path, monkeypatch, identity_config: str | None) -> int:
    from profile_store.cli.main import main

    (tmp_path / "registry.csv").write_text(REGISTRY)
    (tmp_path / "m.json").write_text(json.dumps(REGISTRY_MAPPING))
    if identity_config is None:
        monkeypatch.delenv("PROFILES_IDENTITY_CONFIG", raising=False)
    else:
        (tmp_path / "identity.yaml").write_text(identity_config)
        monkeypatch.setenv("PROFILES_IDENTITY_CONFIG", str(tmp_path / "identity.yaml"))
    args = ["import", str(tmp_path / "registry.csv"), "--mapping", str(tmp_path / "m.json")]
    return main([*args, "--dry-run", "--lake", str(tmp_path / "lake")])


def test_the_import_warns_of_alt_id_kinds_that_bridge_nothing(spark, tmp_path, monkeypatch, capsys):
    assert import_registry(tmp_path, monkeypatch, None) == 0
    assert (
        "profiles import: warning: alt id kinds phone, address are not bridging kinds "
        "(bridging: email_sha256): they will link nothing; add them to the identity "
        "configuration"
    ) in capsys.readouterr().err


def test_the_import_names_only_the_kinds_the_identity_configuration_leaves_out(
    spark, tmp_path, monkeypatch, capsys
):
    assert import_registry(tmp_path, monkeypatch, "alt_id_weights: {phone: 0.95}\n") == 0
    assert "alt id kind address is not a bridging kind (bridging: phone)" in (
        capsys.readouterr().err
    )


def test_the_import_refuses_a_bad_identity_configuration_before_reading(
    tmp_path, monkeypatch, capsys
):
    assert import_registry(tmp_path, monkeypatch, "alt_id_weights: {phone: 0}\n") == 2
    assert "alt_id_weights.phone: must be in (0, 1], got 0.0" in capsys.readouterr().err
