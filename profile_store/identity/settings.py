"""The identity configuration file: which id kinds bridge, their weights, the super-node guard.

One file (YAML, or JSON when it ends in ``.json``) named by ``PROFILES_IDENTITY_CONFIG``, read
by everything that needs the bridging rules (the Dagster code location's ``identity`` resource,
hence ``profiles run``, the schedule and the launchpad's defaults; ``profiles import``'s report
of id kinds that link nothing; the profile reads' accepted key types), so that they cannot
disagree. Its keys are the fields of ``BridgingRules``; every key is optional and an absent
file (the variable unset) is ``BridgingRules()``. A bad file is refused at load with the field
and the problem, before any run starts.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import yaml

from profile_store.identity.rules import BridgingRules

IDENTITY_CONFIG_ENV = "PROFILES_IDENTITY_CONFIG"

_NUMBERS = ("member_weight", "fuzzy_weight")
_INTEGERS = ("fuzzy_window_minutes", "max_profiles_per_key")
_STRING_LISTS = ("blocklist", "blocklist_patterns")


class IdentityConfigError(ValueError):
    """The identity configuration is unusable; the message names the file and the field."""


def _number(value: Any, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise IdentityConfigError(f"{key}: expected a number, got {value!r}")
    return float(value)


def _integer(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise IdentityConfigError(f"{key}: expected a whole number, got {value!r}")
    return value


def _strings(value: Any, key: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise IdentityConfigError(f"{key}: expected a list of strings, got {value!r}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise IdentityConfigError(f"{key}[{index}]: expected a string, got {item!r}")
    return tuple(value)


def _weights(value: Any, key: str) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise IdentityConfigError(
            f"{key}: expected a map of alternate id kind -> weight, got {value!r}"
        )
    return {str(kind): _number(weight, f"{key}.{kind}") for kind, weight in value.items()}


def parse_identity_config(spec: Any) -> BridgingRules:
    """The bridging rules of a parsed YAML/JSON document (None: an empty file, the defaults)."""
    if spec is None:
        return BridgingRules()
    if not isinstance(spec, Mapping):
        raise IdentityConfigError(f"expected an object of setting -> value, got {spec!r}")
    known = [f.name for f in fields(BridgingRules)]
    unknown = sorted(set(spec) - set(known))
    if unknown:
        raise IdentityConfigError(f"{unknown[0]}: not a setting (settings: {', '.join(known)})")
    values: dict[str, Any] = {}
    for key, value in spec.items():
        if key in _NUMBERS:
            values[key] = _number(value, key)
        elif key in _INTEGERS:
            values[key] = _integer(value, key)
        elif key in _STRING_LISTS:
            values[key] = _strings(value, key)
        elif key == "alt_id_weights":
            values[key] = _weights(value, key)
        elif key == "fuzzy_enabled":
            if not isinstance(value, bool):
                raise IdentityConfigError(f"{key}: expected true or false, got {value!r}")
            values[key] = value
        elif key == "history_days":
            values[key] = None if value is None else _integer(value, key)
    try:
        return BridgingRules(**values)
    except ValueError as error:
        raise IdentityConfigError(str(error)) from error


def load_identity_config(path: str | Path) -> BridgingRules:
    """The bridging rules of a file: JSON when it ends in ``.json``, YAML otherwise."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise IdentityConfigError(
            f"{IDENTITY_CONFIG_ENV}={path}: {error.strerror or error}"
        ) from error
    try:
        spec = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as error:
        kind = path.suffix[1:] or "yaml"
        raise IdentityConfigError(f"{path}: not valid {kind}: {error}") from error
    try:
        return parse_identity_config(spec)
    except IdentityConfigError as error:
        raise IdentityConfigError(f"{path}: {error}") from error


def identity_rules_from_env(environ: Mapping[str, str] | None = None) -> BridgingRules:
    """The rules of the file ``PROFILES_IDENTITY_CONFIG`` names; the defaults when it is unset."""
    path = (os.environ if environ is None else environ).get(IDENTITY_CONFIG_ENV, "").strip()
    return load_identity_config(path) if path else BridgingRules()


def non_bridging_kinds(kinds: Iterable[str], rules: BridgingRules) -> list[str]:
    """The alternate id kinds among ``kinds`` (in their order, each once) that link nothing."""
    bridging = set(rules.bridging_alt_id_kinds)
    return [kind for kind in dict.fromkeys(kinds) if kind not in bridging]


def non_bridging_message(kinds: Sequence[str], rules: BridgingRules) -> str:
    """What to tell whoever brings ids of kinds that link nothing, and what to do about it."""
    bridging = ", ".join(rules.bridging_alt_id_kinds) or "none"
    if len(kinds) == 1:
        subject = f"alt id kind {kinds[0]} is not a bridging kind"
        consequence = "it will link nothing; add it"
    else:
        subject = f"alt id kinds {', '.join(kinds)} are not bridging kinds"
        consequence = "they will link nothing; add them"
    return (
        f"{subject} (bridging: {bridging}): {consequence} to the identity configuration "
        f"({IDENTITY_CONFIG_ENV}, docs/configuration.md#the-identity-configuration)"
    )
