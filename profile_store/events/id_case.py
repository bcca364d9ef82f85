"""One spelling per id: the case of ids whose kind ignores case.

An IDFA is an upper-case UUID by Apple's convention, a GAID a lower-case one by Google's, and a
hashed email is a hex digest: ``ABCD...`` and ``abcd...`` name the same device or address.
Without one spelling, the same device is two profiles, and an erased id comes back under its
other spelling. Cookies and logins are opaque: their case is kept.

Ingest, import, the collector and erasure all go through this table, so that an id is compared
in one spelling everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Spark only for the column form; erasure and the service need no JVM.
    from pyspark.sql import Column

UPPER = "upper"
LOWER = "lower"

# id_type of user_id -> the case its ids are spelled in.
USER_ID_CASE = {"idfa": UPPER, "gaid": LOWER}
# Alternate-id kinds whose values are hex digests end with one of these: lower-case hex.
HEX_DIGEST_SUFFIXES = ("_sha256", "_sha1", "_md5")


def alt_id_case(kind: str) -> str | None:
    """The case of an alternate id of ``kind`` (None: kept as sent)."""
    return LOWER if kind.endswith(HEX_DIGEST_SUFFIXES) else None


def case_of(kind: str) -> str | None:
    """The case of ids of ``kind``, a user id type or an alternate-id kind (None: kept)."""
    return USER_ID_CASE.get(kind) or alt_id_case(kind)


def normalize_id(kind: str, value: str) -> str:
    """``value`` in the one spelling of ``kind`` (unchanged for case-sensitive kinds)."""
    return normalize_case(case_of(kind), value)


def normalized_user_id(user_id: Column, id_type: Column) -> Column:
    """Spark: ``user_id`` in the spelling of its row's ``id_type``."""
    from pyspark.sql import functions as F

    def spelled(case: str) -> Column:
        return F.upper(user_id) if case == UPPER else F.lower(user_id)

    (first_kind, first_case), *others = USER_ID_CASE.items()
    expression = F.when(id_type == first_kind, spelled(first_case))
    for kind, case in others:
        expression = expression.when(id_type == kind, spelled(case))
    return expression.otherwise(user_id)


def normalized_alt_ids(alt_ids: Column) -> Column:
    """Spark: every value of an ``alt_ids`` map in the spelling of its kind."""
    from pyspark.sql import functions as F

    def spell(kind: Column, value: Column) -> Column:
        first, *others = (kind.endswith(suffix) for suffix in HEX_DIGEST_SUFFIXES)
        condition = first
        for ends in others:
            condition = condition | ends
        return F.when(condition, F.lower(value)).otherwise(value)

    return F.transform_values(alt_ids, spell)


def spelled_event(event: dict[str, Any]) -> dict[str, Any]:
    """A parsed event with ``user_id`` and the ``alt_ids`` values in their one spelling, as
    ingest's ``normalized_user_id`` and ``normalized_alt_ids`` spell them (an event that keeps
    the contract: strings where they are expected)."""
    spelled = dict(event)
    if isinstance(event.get("id_type"), str) and isinstance(event.get("user_id"), str):
        case = USER_ID_CASE.get(event["id_type"])
        if case is not None:
            spelled["user_id"] = normalize_case(case, event["user_id"])
    alt_ids = event.get("alt_ids")
    if isinstance(alt_ids, dict):
        spelled["alt_ids"] = {
            kind: normalize_case(alt_id_case(kind), value) for kind, value in alt_ids.items()
        }
    return spelled


def normalize_case(case: str | None, value: str) -> str:
    """``value`` in ``case`` (UPPER, LOWER, or None: as it is)."""
    if case == UPPER:
        return value.upper()
    if case == LOWER:
        return value.lower()
    return value
