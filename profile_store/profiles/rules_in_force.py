"""The segment rules in force: one JSON file in the lake, read by the daily run and the live job.

``config/segment_rules.json`` under the lake root (a directory or an S3 prefix) holds the list of
rules, as ``parse_rules`` reads them; while it is absent the built-in ``DEFAULT_RULES`` are in
force. ``profiles segment-rules set`` replaces the file whole, once every rule of the new one is
valid, in one write (a rename on disk, one PUT on S3): a reader finds the old rules or the new,
never a mix. Each reader reports the rules' digest, so that two processes applying different
rules show it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from profile_store.lake.layout import SEGMENT_RULES
from profile_store.lake.storage import LakeStorage
from profile_store.profiles.segment_rules import (
    DEFAULT_RULES,
    SegmentRule,
    SegmentRuleError,
    parse_rules,
    rules_digest,
)

BUILT_IN = "the built-in rules (no rules file in the lake)"


@dataclass(frozen=True)
class RulesInForce:
    """The rules a run applies, and where they came from."""

    rules: tuple[SegmentRule, ...]
    source: str  # the rules file's URI, or BUILT_IN

    @property
    def digest(self) -> str:
        return rules_digest(self.rules)

    def describe(self) -> str:
        count = len(self.rules)
        rules = "segment rule" if count == 1 else "segment rules"
        return f"{count} {rules}, digest {self.digest}, from {self.source}"

    def as_json(self) -> str:
        """The rules as ``profiles segment-rules set`` takes them back."""
        return json.dumps([rule.as_config() for rule in self.rules], indent=2) + "\n"


def rules_from_json(data: bytes | str, where: str) -> tuple[SegmentRule, ...]:
    """Every rule of a JSON list, valid and with unique segments; the error names ``where``, the
    rule and the field."""
    try:
        listed = json.loads(data)
    except ValueError as error:
        raise SegmentRuleError(f"{where}: not JSON ({error})") from None
    if not isinstance(listed, list):
        raise SegmentRuleError(f"{where}: expected a JSON list of rules")
    for index, rule in enumerate(listed):
        if not isinstance(rule, dict):
            raise SegmentRuleError(f"{where}: segment_rules[{index}]: expected an object")
    try:
        return parse_rules(listed)
    except SegmentRuleError as error:
        raise SegmentRuleError(f"{where}: {error}") from None


def rules_file(storage: LakeStorage) -> str:
    """Where the rules file of the lake is (a path or an ``s3://`` URI), for messages."""
    return f"{storage.root.rstrip('/')}/{SEGMENT_RULES}"


def read_rules_in_force(storage: LakeStorage) -> RulesInForce:
    """The lake's rules file, or the built-in rules without one; a file that is not valid
    raises ``SegmentRuleError`` (never the built-in rules in its place)."""
    if not storage.exists(SEGMENT_RULES):
        return RulesInForce(parse_rules(DEFAULT_RULES), BUILT_IN)
    where = rules_file(storage)
    return RulesInForce(rules_from_json(storage.read_bytes(SEGMENT_RULES), where), where)


def replace_rules_in_force(storage: LakeStorage, data: bytes | str, where: str) -> RulesInForce:
    """Make the rules of ``data`` (JSON, from ``where``) the rules in force; invalid ones raise
    ``SegmentRuleError`` and leave the rules in force as they were."""
    rules = rules_from_json(data, where)
    replaced = RulesInForce(rules, rules_file(storage))
    storage.write_bytes(SEGMENT_RULES, replaced.as_json().encode())
    return replaced
