"""Segment rules: event criteria -> segment id with a time to live.

A profile enters a segment with an event that matches the rule; the membership expires
``ttl_days`` after the LAST matching event, so an active user stays in. Rules are evaluated in
Spark as one pass over the day's events (one struct per rule, exploded), never per event in
Python; the live job evaluates the same rules over a batch's columns (``realtime/live_updates``),
and a property test holds the two to the same results. Which rules are in force is one file in
the lake (``rules_in_force``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

DAY_MS = 86_400_000
SEGMENT_ID = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
RULE_FIELDS = {"segment", "event_type", "app_id", "attributes", "ttl_days"}
HITS_COLUMNS = ("profile", "segment", "expiry_ms")


class SegmentRuleError(ValueError):
    """An unusable segment rule; the message names the rule and the field."""


@dataclass(frozen=True)
class SegmentRule:
    """Users who sent ``event_type`` (in ``app_id`` if set, with every attribute value given)."""

    segment: str
    event_type: str
    ttl_days: float
    app_id: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not SEGMENT_ID.match(self.segment):
            raise SegmentRuleError(
                f"segment {self.segment!r}: 1-64 characters of letters, digits, _ . -"
            )
        if not self.event_type:
            raise SegmentRuleError(f"segment {self.segment!r}: event_type must be non-empty")
        if not 0 < self.ttl_days <= 3650:
            raise SegmentRuleError(
                f"segment {self.segment!r}: ttl_days must be in (0, 3650], got {self.ttl_days}"
            )

    @property
    def ttl_ms(self) -> int:
        return int(round(self.ttl_days * DAY_MS))

    def as_config(self) -> dict[str, Any]:
        """The rule as ``parse_rules`` reads it, optional fields only when set."""
        config: dict[str, Any] = {"segment": self.segment, "event_type": self.event_type}
        if self.app_id is not None:
            config["app_id"] = self.app_id
        if self.attributes:
            config["attributes"] = dict(sorted(self.attributes.items()))
        config["ttl_days"] = self.ttl_days
        return config

    def matches(self) -> Column:
        condition = F.col("event_type") == F.lit(self.event_type)
        if self.app_id is not None:
            condition = condition & (F.col("app_id") == F.lit(self.app_id))
        for name, value in sorted(self.attributes.items()):
            condition = condition & (F.col("event_attributes").getItem(name) == F.lit(value))
        return condition


def parse_rules(config: Iterable[Mapping[str, Any]]) -> tuple[SegmentRule, ...]:
    """Rules from plain mappings (Dagster config, JSON); segment ids must be unique."""
    rules: list[SegmentRule] = []
    for index, entry in enumerate(config):
        where = f"segment_rules[{index}]"
        unknown = sorted(set(entry) - RULE_FIELDS)
        if unknown:
            raise SegmentRuleError(f"{where}.{unknown[0]}: unknown field")
        for required in ("segment", "event_type", "ttl_days"):
            if entry.get(required) in (None, ""):
                raise SegmentRuleError(f"{where}.{required}: required")
        attributes = entry.get("attributes") or {}
        if not isinstance(attributes, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in attributes.items()
        ):
            raise SegmentRuleError(f"{where}.attributes: expected a map of strings to strings")
        try:
            rule = SegmentRule(
                segment=str(entry["segment"]),
                event_type=str(entry["event_type"]),
                ttl_days=float(entry["ttl_days"]),
                app_id=entry.get("app_id") or None,
                attributes=dict(attributes),
            )
        except (TypeError, ValueError) as error:
            raise SegmentRuleError(f"{where}: {error}") from None
        if rule.segment in {r.segment for r in rules}:
            raise SegmentRuleError(f"{where}.segment: duplicate segment id {rule.segment!r}")
        rules.append(rule)
    return tuple(rules)


def rules_digest(rules: Iterable[SegmentRule]) -> str:
    """12 hex digits naming the rules (their canonical JSON), however their file was spelled:
    two processes reporting the same digest apply the same rules."""
    canonical = json.dumps(
        [rule.as_config() for rule in rules], sort_keys=True, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def segment_hits(events: DataFrame, rules: tuple[SegmentRule, ...]) -> DataFrame:
    """Per (profile, segment) of the events: expiry = last matching event + the rule's TTL."""
    spark = events.sparkSession
    if not rules:
        return spark.createDataFrame([], "profile string, segment string, expiry_ms long")
    event_ms = F.unix_millis(F.col("event_time"))
    hits = F.array(
        *[
            F.when(
                rule.matches(),
                F.struct(
                    F.lit(rule.segment).alias("segment"),
                    (event_ms + F.lit(rule.ttl_ms)).alias("expiry_ms"),
                ),
            )
            for rule in rules
        ]
    )
    exploded = events.select(
        F.col("user_id").alias("profile"),
        F.explode(F.filter(hits, lambda hit: hit.isNotNull())).alias("hit"),
    )
    return exploded.groupBy("profile", F.col("hit.segment").alias("segment")).agg(
        F.max("hit.expiry_ms").alias("expiry_ms")
    )


DEFAULT_RULES: tuple[dict[str, Any], ...] = (
    {"segment": "clickers", "event_type": "click", "ttl_days": 7},
    {
        "segment": "shoppers",
        "app_id": "com.shopfast.android",
        "event_type": "add_to_cart",
        "ttl_days": 30,
    },
    {
        "segment": "buyers",
        "app_id": "com.shopfast.android",
        "event_type": "purchase",
        "ttl_days": 60,
    },
    {
        "segment": "shoe_lovers",
        "app_id": "com.shopfast.android",
        "event_type": "view_item",
        "attributes": {"product_type": "shoes"},
        "ttl_days": 14,
    },
    {
        "segment": "game_payers",
        "app_id": "com.pixelquest.dragons",
        "event_type": "iap_purchase",
        "ttl_days": 90,
    },
    {
        "segment": "news_subscribers",
        "app_id": "com.dailyherald.reader",
        "event_type": "subscribe",
        "ttl_days": 365,
    },
    {"segment": "travellers", "app_id": "com.travelnow.web", "event_type": "book", "ttl_days": 30},
)
"""The rules in force while the lake has no rules file: they fit the generated sample apps
(``profiles generate``); production sets its own (``profiles segment-rules set``)."""
