"""The identity configuration file: its rules, its defaults, and the refusals of a bad one."""

from __future__ import annotations

import json

import pytest

from profile_store.identity.rules import DEFAULT_BLOCKLIST, BridgingRules
from profile_store.identity.settings import (
    IDENTITY_CONFIG_ENV,
    IdentityConfigError,
    identity_rules_from_env,
    load_identity_config,
    non_bridging_kinds,
    non_bridging_message,
)


def write(tmp_path, text: str, name: str = "identity.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_without_a_file_the_rules_are_the_defaults():
    assert identity_rules_from_env({}) == BridgingRules()


def test_an_empty_file_is_the_defaults(tmp_path):
    assert load_identity_config(write(tmp_path, "")) == BridgingRules()


def test_the_file_the_variable_names_sets_kinds_weights_bound_and_blocklist(tmp_path):
    path = write(
        tmp_path,
        "alt_id_weights:\n  email_sha256: 0.95\n  phone: 0.92\n"
        "max_profiles_per_key: 20\nblocklist: ['0', 'n/a', '000-000']\n"
        "blocklist_patterns: ['test-\\d+']\nhistory_days: 90\n",
    )
    rules = identity_rules_from_env({IDENTITY_CONFIG_ENV: str(path)})
    assert rules.alt_id_weights == {"email_sha256": 0.95, "phone": 0.92}
    assert rules.bridging_alt_id_kinds == ("email_sha256", "phone")
    assert rules.max_profiles_per_key == 20
    assert rules.blocklist == ("0", "n/a", "000-000")
    assert rules.blocklist_patterns == ("test-\\d+",)
    assert rules.history_days == 90


def test_a_json_file_is_read_as_json(tmp_path):
    path = write(tmp_path, json.dumps({"alt_id_weights": {"phone": 1}}), "identity.json")
    assert load_identity_config(path).alt_id_weights == {"phone": 1.0}


def test_settings_left_out_keep_their_defaults(tmp_path):
    rules = load_identity_config(write(tmp_path, "max_profiles_per_key: 10\n"))
    assert rules.alt_id_weights == {"email_sha256": 0.95}
    assert rules.blocklist == DEFAULT_BLOCKLIST


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("max_profile_per_key: 10\n", "max_profile_per_key: not a setting"),
        ("alt_id_weights:\n  phone: high\n", "alt_id_weights.phone: expected a number, got 'high'"),
        ("alt_id_weights:\n  phone: 1.5\n", "alt_id_weights.phone: must be in (0, 1], got 1.5"),
        ("alt_id_weights: [phone]\n", "alt_id_weights: expected a map of alternate id kind"),
        ("alt_id_weights:\n  member_id: 1\n", "alt_id_weights.member_id: not an alternate id"),
        ("max_profiles_per_key: 1\n", "max_profiles_per_key: must be at least 2, got 1"),
        ("max_profiles_per_key: 2.5\n", "max_profiles_per_key: expected a whole number"),
        ("blocklist: unknown\n", "blocklist: expected a list of strings"),
        ("blocklist: ['0', 0]\n", "blocklist[1]: expected a string, got 0"),
        ("blocklist_patterns: ['(']\n", "blocklist_patterns[0]: '(' is not a regular expression"),
        ("fuzzy_enabled: yes please\n", "fuzzy_enabled: expected true or false"),
        ("history_days: 0\n", "history_days: must be at least 1"),
        ("- phone\n", "expected an object of setting -> value"),
    ],
)
def test_a_bad_setting_is_refused_naming_the_file_and_the_field(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(IdentityConfigError) as raised:
        load_identity_config(path)
    assert str(raised.value).startswith(f"{path}: ")
    assert message in str(raised.value)


def test_a_file_that_does_not_parse_is_refused_with_its_name(tmp_path):
    path = write(tmp_path, "alt_id_weights: {phone: 0.9\n")
    with pytest.raises(IdentityConfigError, match=f"{path}: not valid yaml"):
        load_identity_config(path)


def test_a_missing_file_is_refused_naming_the_variable(tmp_path):
    missing = tmp_path / "nowhere.yaml"
    with pytest.raises(IdentityConfigError, match=f"{IDENTITY_CONFIG_ENV}={missing}: "):
        identity_rules_from_env({IDENTITY_CONFIG_ENV: str(missing)})


def test_kinds_the_rules_do_not_bridge_are_named_in_their_order():
    rules = BridgingRules()
    assert non_bridging_kinds(["phone", "email_sha256", "address"], rules) == ["phone", "address"]


def test_the_message_of_kinds_that_bridge_nothing_says_what_to_do():
    message = non_bridging_message(["phone", "address"], BridgingRules())
    assert message.startswith(
        "alt id kinds phone, address are not bridging kinds (bridging: email_sha256): "
        "they will link nothing; add them to the identity configuration"
    )
    assert IDENTITY_CONFIG_ENV in message
