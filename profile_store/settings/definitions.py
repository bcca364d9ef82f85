"""One definition per numeric or date setting of the environment, and its reading.

A value outside its range used to surface late (``PROFILES_SKETCH_LG_K=3`` failed half a minute
into a run, deep inside Spark, without the variable's name). Each setting is defined here once,
with its range; every reader goes through ``Setting.read``, and ``check_environment`` reads them
all when a command, the service or the Dagster code location loads, so a bad value stops it
before any work with the variable's name, the valid range and the value given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Literal

Kind = Literal["integer", "number", "date"]


class SettingError(ValueError):
    """A setting's value that is not of its type or outside its range; the message names it."""


@dataclass(frozen=True)
class Setting:
    """An environment variable: its type, valid range (inclusive unless ``above`` is set),
    default (None: computed where it is used) and what it means."""

    name: str
    kind: Kind
    default: int | float | date | None
    doc: str
    minimum: int | float | None = None
    maximum: int | float | None = None
    above: bool = False
    """``minimum`` is exclusive (a number of seconds > 0)."""
    why_range: str = ""
    """Where the range comes from, when it is not obvious (shown in the error)."""

    def valid_values(self) -> str:
        """The type and range in words: "an integer from 5 to 26", "a number > 0"."""
        noun = {"integer": "a whole number", "number": "a number", "date": "a date as YYYY-MM-DD"}
        text = noun[self.kind]
        if self.minimum is not None and self.maximum is not None:
            text += f" from {self.minimum} to {self.maximum}"
        elif self.minimum is not None:
            text += f" {'>' if self.above else '>='} {self.minimum}"
        elif self.maximum is not None:
            text += f" <= {self.maximum}"
        return text + (f" ({self.why_range})" if self.why_range else "")

    def shown_default(self) -> str:
        """The default as the docs show it (``10`` for 10.0 seconds); empty when computed."""
        if self.default is None:
            return ""
        if isinstance(self.default, float) and self.default.is_integer():
            return str(int(self.default))
        return str(self.default)

    @property
    def integer_default(self) -> int:
        """The default of an integer setting; a TypeError for a setting without one."""
        if self.kind != "integer" or not isinstance(self.default, int):
            raise TypeError(f"{self.name}: not an integer setting with a default")
        return self.default

    @property
    def number_default(self) -> float:
        """The default of a number setting; a TypeError for a setting without one."""
        if self.kind != "number" or not isinstance(self.default, int | float):
            raise TypeError(f"{self.name}: not a number setting with a default")
        return self.default

    def read_integer(self, env: Mapping[str, str] | None = None) -> int | None:
        """``read`` for an integer setting (a TypeError for another kind)."""
        if self.kind != "integer":
            raise TypeError(f"{self.name}: not an integer setting")
        value = self.read(env)
        assert value is None or isinstance(value, int)  # parse returns int for "integer"
        return value

    def parse(self, text: str) -> int | float | date:
        """``text`` as this setting's value; ``SettingError`` naming the setting otherwise."""
        refused = SettingError(f"{self.name}: expected {self.valid_values()}, got {text!r}")
        try:
            if self.kind == "date":
                return date.fromisoformat(text)
            value: int | float = int(text) if self.kind == "integer" else float(text)
        except ValueError:
            raise refused from None
        if value != value or value in (float("inf"), float("-inf")):  # NaN and infinities
            raise refused
        low, high = self.minimum, self.maximum
        if low is not None and (value <= low if self.above else value < low):
            raise refused
        if high is not None and value > high:
            raise refused
        return value

    def read(self, env: Mapping[str, str] | None = None):
        """The value in ``env`` (the process's environment by default); unset or blank: the
        default."""
        text = (os.environ if env is None else env).get(self.name, "").strip()
        return self.parse(text) if text else self.default


SKETCH_LG_K = Setting(
    "PROFILES_SKETCH_LG_K",
    "integer",
    12,
    "theta sketch size k = 2^lg_k (relative standard error about 1/sqrt(k))",
    minimum=5,
    maximum=26,
    why_range="what both DataSketches and Spark's sketch aggregates accept",
)
TRIM_WINDOW_DAYS = Setting(
    "PROFILES_TRIM_WINDOW_DAYS",
    "integer",
    7,
    "trailing window of the attribute keep/trim decision, in days",
    minimum=1,
)
START_DATE = Setting(
    "PROFILES_START_DATE",
    "date",
    date(2026, 11, 1),
    "first day partition; set it on or before your oldest day",
)
SHUFFLE_PARTITIONS = Setting(
    "SPARK_SHUFFLE_PARTITIONS",
    "integer",
    8,
    "`spark.sql.shuffle.partitions` (about 128 MB of shuffle per partition at scale)",
    minimum=1,
)
SENSOR_INTERVAL_SECONDS = Setting(
    "PROFILES_SENSOR_INTERVAL_SECONDS",
    "integer",
    30,
    "how often the daemon evaluates the sensors, in seconds",
    minimum=1,
)
HBASE_THRIFT_PORT = Setting(
    "HBASE_THRIFT_PORT", "integer", 9090, "the HBase Thrift server's port", minimum=1, maximum=65535
)
HBASE_GATEWAY_WORKERS = Setting(
    "PROFILES_HBASE_GATEWAY_WORKERS",
    "integer",
    None,
    "worker processes of the embedded gateway (unset: the CPU count, at most 4)",
    minimum=1,
)
KAFKA_PARTITIONS = Setting(
    "PROFILES_KAFKA_PARTITIONS",
    "integer",
    6,
    "partitions of the events topic when it is created (an existing topic keeps its own)",
    minimum=1,
)
KAFKA_REPLICATION_FACTOR = Setting(
    "PROFILES_KAFKA_REPLICATION_FACTOR",
    "integer",
    1,
    "replication factor of the events topic when it is created",
    minimum=1,
)
KAFKA_MIN_INSYNC_REPLICAS = Setting(
    "PROFILES_KAFKA_MIN_INSYNC_REPLICAS",
    "integer",
    None,
    "`min.insync.replicas` of the events topic when it is created (unset: the broker's "
    "default); at most the replication factor",
    minimum=1,
)
HTTP_HEADER_TIMEOUT_SECONDS = Setting(
    "PROFILES_HTTP_HEADER_TIMEOUT_SECONDS",
    "number",
    10.0,
    "seconds a request's headers may take: slower is a 408 and the connection is closed",
    minimum=0,
    above=True,
)
HTTP_BODY_TIMEOUT_SECONDS = Setting(
    "PROFILES_HTTP_BODY_TIMEOUT_SECONDS",
    "number",
    30.0,
    "seconds a request body may take: slower is a 408 and the connection is closed",
    minimum=0,
    above=True,
)
COLLECTOR_DELIVERY_TIMEOUT_SECONDS = Setting(
    "PROFILES_COLLECTOR_DELIVERY_TIMEOUT_SECONDS",
    "number",
    # Above the time Kafka takes to move a crashed broker's partitions to another replica (its
    # broker.session.timeout.ms, 9 s by default): a request in that window waits, not a 503.
    30.0,
    "seconds POST /v1/events waits for Kafka's acknowledgements before answering 503",
    minimum=0,
    above=True,
)
ERASURE_MAX_PROFILES = Setting(
    "PROFILES_ERASURE_MAX_PROFILES",
    "integer",
    100,
    "an erasure request resolving to more profiles is refused",
    minimum=1,
)

SETTINGS: tuple[Setting, ...] = (
    SKETCH_LG_K,
    TRIM_WINDOW_DAYS,
    START_DATE,
    SHUFFLE_PARTITIONS,
    SENSOR_INTERVAL_SECONDS,
    HBASE_THRIFT_PORT,
    HBASE_GATEWAY_WORKERS,
    KAFKA_PARTITIONS,
    KAFKA_REPLICATION_FACTOR,
    KAFKA_MIN_INSYNC_REPLICAS,
    HTTP_HEADER_TIMEOUT_SECONDS,
    HTTP_BODY_TIMEOUT_SECONDS,
    COLLECTOR_DELIVERY_TIMEOUT_SECONDS,
    ERASURE_MAX_PROFILES,
)


def check_environment(env: Mapping[str, str] | None = None) -> None:
    """Read every setting of ``SETTINGS``; ``SettingError`` lists every bad one, one a line."""
    problems = []
    for setting in SETTINGS:
        try:
            setting.read(env)
        except SettingError as error:
            problems.append(str(error))
    if problems:
        raise SettingError("\n".join(problems))
