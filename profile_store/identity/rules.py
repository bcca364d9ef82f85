"""Bridging rules: which keys link two profiles, their weights, and the super-node guard."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MEMBER_ID = "member_id"
FUZZY_IP_UA = "ip24_user_agent"

RULE_MEMBER_ID = "member_id"
RULE_ALT_ID = "alt_id"
RULE_FUZZY = "fuzzy_ip_ua"

DEFAULT_BLOCKLIST = ("", "0", "null", "none", "unknown", "undefined", "nan", "n/a", "-")
DEFAULT_ALT_ID_WEIGHTS = {"email_sha256": 0.95}


@dataclass(frozen=True)
class BridgingRules:
    """How profiles are bridged.

    ``member_id``: the same login on two profiles (deterministic, ``member_weight``).
    ``alt_id_weights``: the same alternate id of that type (``alt_ids`` map); types not listed
    are ignored. ``fuzzy_*``: optional probabilistic rule, the same IPv4 /24 prefix and the same
    user agent inside one tumbling window of ``fuzzy_window_minutes``.

    Super-node guard: a key shared by more than ``max_profiles_per_key`` profiles over the whole
    history (or the trailing ``history_days`` when set), or whose value is on the blocklist
    (case-insensitive exact ``blocklist`` values after trimming, or a full match of one of
    ``blocklist_patterns``), makes no edge and is quarantined instead.
    """

    member_weight: float = 1.0
    alt_id_weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_ALT_ID_WEIGHTS))
    fuzzy_enabled: bool = False
    fuzzy_weight: float = 0.5
    fuzzy_window_minutes: int = 30
    max_profiles_per_key: int = 50
    history_days: int | None = None
    blocklist: tuple[str, ...] = DEFAULT_BLOCKLIST
    blocklist_patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Every message starts with the field it is about (a file's or a launchpad's)."""
        weights = {"member_weight": self.member_weight, "fuzzy_weight": self.fuzzy_weight}
        weights.update({f"alt_id_weights.{kind}": w for kind, w in self.alt_id_weights.items()})
        for name, weight in weights.items():
            if not 0.0 < weight <= 1.0:
                raise ValueError(f"{name}: must be in (0, 1], got {weight}")
        if self.fuzzy_weight >= 1.0:
            raise ValueError("fuzzy_weight: the fuzzy rule is probabilistic: must be below 1")
        for kind in (MEMBER_ID, FUZZY_IP_UA):
            if kind in self.alt_id_weights:
                raise ValueError(
                    f"alt_id_weights.{kind}: not an alternate id (member_id has member_weight, "
                    "the fuzzy key fuzzy_enabled)"
                )
        if any(not kind.strip() for kind in self.alt_id_weights):
            raise ValueError("alt_id_weights: an alternate id kind must be a non-empty name")
        if self.max_profiles_per_key < 2:
            raise ValueError(
                f"max_profiles_per_key: must be at least 2, got {self.max_profiles_per_key}"
            )
        if self.fuzzy_window_minutes < 1:
            raise ValueError(
                f"fuzzy_window_minutes: must be at least 1, got {self.fuzzy_window_minutes}"
            )
        if self.history_days is not None and self.history_days < 1:
            raise ValueError(
                f"history_days: must be at least 1 (or unset: the whole history), "
                f"got {self.history_days}"
            )
        for index, pattern in enumerate(self.blocklist_patterns):
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(
                    f"blocklist_patterns[{index}]: {pattern!r} is not a regular expression: {error}"
                ) from error

    def weight_of(self, key_type: str) -> float:
        if key_type == MEMBER_ID:
            return self.member_weight
        if key_type == FUZZY_IP_UA:
            return self.fuzzy_weight
        return self.alt_id_weights[key_type]

    def rule_of(self, key_type: str) -> str:
        if key_type == MEMBER_ID:
            return RULE_MEMBER_ID
        if key_type == FUZZY_IP_UA:
            return RULE_FUZZY
        return RULE_ALT_ID

    @property
    def bridging_alt_id_kinds(self) -> tuple[str, ...]:
        """The alternate id kinds (keys of an event's ``alt_ids``) that link profiles."""
        return tuple(sorted(self.alt_id_weights))

    @property
    def key_types(self) -> tuple[str, ...]:
        fuzzy = (FUZZY_IP_UA,) if self.fuzzy_enabled else ()
        return (MEMBER_ID, *sorted(self.alt_id_weights), *fuzzy)
