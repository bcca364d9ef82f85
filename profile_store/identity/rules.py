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
        weights = {MEMBER_ID: self.member_weight, FUZZY_IP_UA: self.fuzzy_weight}
        weights.update(self.alt_id_weights)
        for name, weight in weights.items():
            if not 0.0 < weight <= 1.0:
                raise ValueError(f"weight of {name!r} must be in (0, 1], got {weight}")
        if self.fuzzy_weight >= 1.0:
            raise ValueError("the fuzzy rule is probabilistic: its weight must be below 1")
        if MEMBER_ID in self.alt_id_weights or FUZZY_IP_UA in self.alt_id_weights:
            raise ValueError("alt_id_weights: member_id and the fuzzy key are not alternate ids")
        if self.max_profiles_per_key < 2:
            raise ValueError("max_profiles_per_key must be at least 2")
        if self.fuzzy_window_minutes < 1:
            raise ValueError("fuzzy_window_minutes must be at least 1")
        if self.history_days is not None and self.history_days < 1:
            raise ValueError("history_days must be at least 1 (or None: the whole history)")
        for pattern in self.blocklist_patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"blocklist pattern {pattern!r}: {error}") from error

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
    def key_types(self) -> tuple[str, ...]:
        fuzzy = (FUZZY_IP_UA,) if self.fuzzy_enabled else ()
        return (MEMBER_ID, *sorted(self.alt_id_weights), *fuzzy)
