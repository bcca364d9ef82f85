"""``profiles segment-rules``: the one place the segment rules are shown and changed, for the daily
run and the live job alike."""

from __future__ import annotations

import json

import boto3
import pytest

from profile_store.cli import main as cli
from profile_store.lake.layout import SEGMENT_RULES
from profile_store.lake.settings import LakeSettings
from profile_store.lake.storage import LocalLakeStorage
from profile_store.profiles.rules_in_force import BUILT_IN, read_rules_in_force
from profile_store.profiles.segment_rules import DEFAULT_RULES, parse_rules, rules_digest

RULES = [
    {"segment": "shoe_lovers", "event_type": "view_item", "attributes": {"product_type": "shoes"},
     "ttl_days": 14},
    {"segment": "buyers", "app_id": "shop", "event_type": "purchase", "ttl_days": 60},
]  # fmt: skip


@pytest.fixture
def rules_file(tmp_path):
    def write(rules: object) -> str:
        path = tmp_path / "rules.json"
        path.write_text(json.dumps(rules))
        return str(path)

    return write


def test_a_lake_without_a_rules_file_shows_the_built_in_rules_and_their_digest(tmp_path, capsys):
    assert cli.main(["segment-rules", "show", "--lake", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert parse_rules(json.loads(out)) == parse_rules(DEFAULT_RULES)
    digest = rules_digest(parse_rules(DEFAULT_RULES))
    assert f"{len(DEFAULT_RULES)} segment rules, digest {digest}, from {BUILT_IN}" in err


def test_set_rules_are_the_rules_in_force_and_show_prints_them_back(tmp_path, rules_file, capsys):
    assert cli.main(["segment-rules", "set", rules_file(RULES), "--lake", str(tmp_path)]) == 0
    said = capsys.readouterr().out
    assert rules_digest(parse_rules(RULES)) in said and "next daily run" in said
    assert read_rules_in_force(LocalLakeStorage(tmp_path)).rules == parse_rules(RULES)
    assert cli.main(["segment-rules", "show", "--lake", str(tmp_path)]) == 0
    assert parse_rules(json.loads(capsys.readouterr().out)) == parse_rules(RULES)


def test_the_digest_is_the_rules_not_the_spelling_of_their_file(tmp_path):
    storage = LocalLakeStorage(tmp_path)
    spelled = [{**rule, "ttl_days": float(rule["ttl_days"])} for rule in RULES]
    storage.write_bytes(SEGMENT_RULES, json.dumps(spelled, indent=8).encode())
    assert read_rules_in_force(storage).digest == rules_digest(parse_rules(RULES))


@pytest.mark.parametrize(
    ("rules", "words"),
    [
        (
            [*RULES, {"segment": "late", "event_type": "click", "ttl_days": 0}],
            "segment_rules[2]: segment 'late': ttl_days must be in (0, 3650], got 0.0",
        ),
        ([{"segment": "x", "ttl_days": 1}], "segment_rules[0].event_type: required"),
        ([{"segment": "x", "event_type": "click", "ttl": 1}], "segment_rules[0].ttl: unknown"),
        ({"segment": "x"}, "expected a JSON list of rules"),
        ([["x"]], "segment_rules[0]: expected an object"),
    ],
)
def test_a_bad_rule_is_refused_naming_it_and_the_rules_in_force_stay(
    tmp_path, rules_file, capsys, rules, words
):
    assert cli.main(["segment-rules", "set", rules_file(RULES), "--lake", str(tmp_path)]) == 0
    before = (tmp_path / SEGMENT_RULES).read_bytes()
    assert cli.main(["segment-rules", "set", rules_file(rules), "--lake", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert words in err and "the rules in force are unchanged" in err
    assert (tmp_path / SEGMENT_RULES).read_bytes() == before


def test_a_file_that_is_not_json_is_refused_and_nothing_is_written(tmp_path, capsys):
    path = tmp_path / "rules.json"
    path.write_text("[{segment: x}]")
    assert cli.main(["segment-rules", "set", str(path), "--lake", str(tmp_path / "lake")]) == 2
    assert "not JSON" in capsys.readouterr().err
    assert not (tmp_path / "lake" / SEGMENT_RULES).exists()


def test_a_hand_edited_rules_file_that_is_not_valid_is_reported_not_replaced_by_defaults(
    tmp_path, capsys
):
    LocalLakeStorage(tmp_path).write_bytes(SEGMENT_RULES, b'[{"segment": "x"}]')
    assert cli.main(["segment-rules", "show", "--lake", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path}/{SEGMENT_RULES}: segment_rules[0].event_type: required" in err


@pytest.fixture
def s3_lake(s3_endpoint, monkeypatch) -> str:
    """An empty lake under an S3 prefix (a moto server), the commands' environment pointing
    there."""
    for name, value in (
        ("AWS_ACCESS_KEY_ID", "testing"),
        ("AWS_SECRET_ACCESS_KEY", "testing"),
        ("AWS_REGION", "us-east-1"),
        ("PROFILES_S3_ENDPOINT_URL", s3_endpoint),
        ("PROFILES_LAKE_ROOT", "s3://rules-bucket/lake"),
    ):
        monkeypatch.setenv(name, value)
    client = boto3.client("s3", endpoint_url=s3_endpoint, region_name="us-east-1")
    client.create_bucket(Bucket="rules-bucket")
    yield "s3://rules-bucket/lake"
    for obj in client.list_objects_v2(Bucket="rules-bucket").get("Contents", []):
        client.delete_object(Bucket="rules-bucket", Key=obj["Key"])
    client.delete_bucket(Bucket="rules-bucket")


def test_the_rules_of_an_s3_lake_are_set_and_read_back_there(s3_lake, rules_file, capsys):
    assert cli.main(["segment-rules", "set", rules_file(RULES)]) == 0
    in_force = read_rules_in_force(LakeSettings.from_env().storage())
    assert in_force.rules == parse_rules(RULES)
    assert in_force.source == f"{s3_lake}/{SEGMENT_RULES}"
    assert cli.main(["segment-rules", "show"]) == 0
    assert f"digest {rules_digest(parse_rules(RULES))}" in capsys.readouterr().err
