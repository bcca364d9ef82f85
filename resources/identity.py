"""The identity resource: the bridging rules of the identity file, configurable in Dagster.

Built from ``PROFILES_IDENTITY_CONFIG`` (``profile_store.identity.settings``) by
``resources_from_env``, so the launchpad, the schedule, the sensors and ``profiles run`` start
from the same rules; the launchpad's ``resources.identity.config`` changes them for one run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, fields
from typing import Any

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field

from profile_store.identity.rules import DEFAULT_ALT_ID_WEIGHTS, DEFAULT_BLOCKLIST, BridgingRules
from profile_store.identity.settings import identity_rules_from_env


class IdentityResource(ConfigurableResource):
    """Which ids bridge profiles, their weights and the super-node guard (``BridgingRules``)."""

    member_weight: float = Field(default=1.0, description="Weight of a shared member_id edge.")
    alt_id_weights: dict[str, float] = Field(
        default_factory=lambda: dict(DEFAULT_ALT_ID_WEIGHTS),
        description="Alternate id kinds (keys of alt_ids) that bridge, with their weights; "
        "a kind not listed links nothing.",
    )
    fuzzy_enabled: bool = Field(
        default=False, description="Link profiles on the same IPv4 /24 and user agent."
    )
    fuzzy_weight: float = Field(default=0.5, description="Weight of a fuzzy edge (below 1).")
    fuzzy_window_minutes: int = Field(
        default=30, description="Fuzzy rule: both seen inside one tumbling window of this size."
    )
    max_profiles_per_key: int = Field(
        default=50, description="Super-node guard: a key on more profiles makes no edge."
    )
    history_days: int | None = Field(
        default=None, description="Days of key history the guard counts (None: all of it)."
    )
    blocklist: list[str] = Field(
        default_factory=lambda: list(DEFAULT_BLOCKLIST),
        description="Placeholder values (case-insensitive, trimmed) that never bridge.",
    )
    blocklist_patterns: list[str] = Field(
        default_factory=list, description="Regular expressions (full match) that never bridge."
    )

    @classmethod
    def from_rules(cls, rules: BridgingRules) -> IdentityResource:
        # Every field of the rules, so a rule added there cannot be left at its default here.
        values: dict[str, Any] = {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in asdict(rules).items()
        }
        return cls(**values)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> IdentityResource:
        """From the file ``PROFILES_IDENTITY_CONFIG`` names (the defaults when unset)."""
        return cls.from_rules(identity_rules_from_env(environ))

    def rules(self) -> BridgingRules:
        """The resource's rules, validated (a bad value raises ``ValueError`` naming it)."""
        values: dict[str, Any] = {}
        for rule in fields(BridgingRules):
            value = getattr(self, rule.name)
            values[rule.name] = tuple(value) if isinstance(value, list) else value
        return BridgingRules(**values)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.rules()
