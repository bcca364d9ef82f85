"""Where the event bus is and how to reach it, from the environment.

Unset, everything points at the project's own broker (``profiles kafka``, 127.0.0.1:9092), as
the embedded gateway stands in for HBase; production sets the bootstrap servers of its cluster
and passes its security settings through as librdkafka properties, by configuration only.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from profile_store.settings.definitions import (
    KAFKA_MIN_INSYNC_REPLICAS,
    KAFKA_PARTITIONS,
    KAFKA_REPLICATION_FACTOR,
    Setting,
    SettingError,
)

DEFAULT_BOOTSTRAP_SERVERS = "127.0.0.1:9092"
DEFAULT_TOPIC = "events"
DEFAULT_PARTITIONS = KAFKA_PARTITIONS.integer_default

# librdkafka properties that carry the path's guarantees; the environment may not change them.
GUARANTEED_PROPERTIES = frozenset(
    {
        "bootstrap.servers",
        "acks",
        "request.required.acks",
        "enable.idempotence",
        "partitioner",
        "enable.auto.commit",
        "enable.auto.offset.store",
        "group.id",
    }
)
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


class EventBusSettingsError(ValueError):
    """A setting of the event bus is unusable; the message names the variable."""


@dataclass(frozen=True)
class EventBusSettings:
    """Bootstrap servers, the events topic and its shape, and extra client properties.

    ``min_insync_replicas`` (None: the broker's default) is how many replicas must hold an
    event before Kafka acknowledges it to the collector (``acks=all``): with 3 replicas and 2,
    one broker may fail without an accepted event being lost or the collector refusing."""

    bootstrap_servers: str = DEFAULT_BOOTSTRAP_SERVERS
    topic: str = DEFAULT_TOPIC
    partitions: int = DEFAULT_PARTITIONS
    replication_factor: int = 1
    min_insync_replicas: int | None = None
    client_properties: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.bootstrap_servers.strip():
            raise EventBusSettingsError("PROFILES_KAFKA_BOOTSTRAP_SERVERS: must not be empty")
        if not _TOPIC_NAME.match(self.topic) or self.topic in (".", ".."):
            raise EventBusSettingsError(
                f"PROFILES_KAFKA_TOPIC: {self.topic!r} is not a Kafka topic name (1-249 of "
                "letters, digits, '.', '_', '-')"
            )
        for name, value in (
            ("PROFILES_KAFKA_PARTITIONS", self.partitions),
            ("PROFILES_KAFKA_REPLICATION_FACTOR", self.replication_factor),
        ):
            if value < 1:
                raise EventBusSettingsError(f"{name}: must be at least 1, got {value}")
        if self.min_insync_replicas is not None and not (
            1 <= self.min_insync_replicas <= self.replication_factor
        ):
            raise EventBusSettingsError(
                f"PROFILES_KAFKA_MIN_INSYNC_REPLICAS: must be from 1 to the replication factor "
                f"({self.replication_factor}), got {self.min_insync_replicas} (Kafka would refuse "
                "every write)"
            )
        for name, value in self.client_properties.items():
            if name in GUARANTEED_PROPERTIES:
                raise EventBusSettingsError(
                    f"PROFILES_KAFKA_CONFIG_JSON: {name!r} is set by the project (it carries "
                    "the delivery guarantees); remove it"
                )
            if not isinstance(value, str | int | float | bool):
                raise EventBusSettingsError(
                    f"PROFILES_KAFKA_CONFIG_JSON: {name!r} must be a string, number or boolean, "
                    f"got {_json_type(value)}"
                )

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> EventBusSettings:
        """``PROFILES_KAFKA_BOOTSTRAP_SERVERS``, ``PROFILES_KAFKA_TOPIC``,
        ``PROFILES_KAFKA_PARTITIONS``, ``PROFILES_KAFKA_REPLICATION_FACTOR``,
        ``PROFILES_KAFKA_MIN_INSYNC_REPLICAS`` and ``PROFILES_KAFKA_CONFIG_JSON`` (librdkafka
        properties, e.g. ``security.protocol``)."""
        env = os.environ if env is None else env
        return cls(
            bootstrap_servers=env.get(
                "PROFILES_KAFKA_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP_SERVERS
            ),
            topic=env.get("PROFILES_KAFKA_TOPIC", DEFAULT_TOPIC),
            partitions=_whole_number(env, KAFKA_PARTITIONS) or KAFKA_PARTITIONS.integer_default,
            replication_factor=(
                _whole_number(env, KAFKA_REPLICATION_FACTOR)
                or KAFKA_REPLICATION_FACTOR.integer_default
            ),
            min_insync_replicas=_whole_number(env, KAFKA_MIN_INSYNC_REPLICAS),
            client_properties=_properties(env.get("PROFILES_KAFKA_CONFIG_JSON", "")),
        )

    def client_config(self, **properties: Any) -> dict[str, Any]:
        """librdkafka configuration: the servers, the extra properties, then ``properties``."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.client_properties, **properties}


def _whole_number(env: Mapping[str, str], setting: Setting) -> int | None:
    try:
        return setting.read_integer(env)
    except SettingError as error:
        raise EventBusSettingsError(str(error)) from None


def _properties(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise EventBusSettingsError(f"PROFILES_KAFKA_CONFIG_JSON: not JSON ({error})") from None
    if not isinstance(value, dict):
        raise EventBusSettingsError(
            f"PROFILES_KAFKA_CONFIG_JSON: expected a JSON object of librdkafka properties, got "
            f"{_json_type(value)}"
        )
    return value


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    return "an array" if isinstance(value, list) else type(value).__name__
