"""The Kafka key of an event: its user id, in the one spelling of its kind.

The events topic is partitioned by key, so each device's events share a partition and stay in
order there; spelled as ingest spells it (``id_case``), an IDFA sent upper- and lower-case is
one key, hence one partition.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from profile_store.events.id_case import normalize_id


def event_key(event: Mapping[str, Any]) -> str | None:
    """The key of a parsed event; None when it has no usable ``user_id``."""
    user_id, id_type = event.get("user_id"), event.get("id_type")
    if not isinstance(user_id, str) or not user_id.strip():
        return None
    return normalize_id(id_type, user_id) if isinstance(id_type, str) else user_id


def line_key(line: bytes) -> bytes:
    """The key of a landing line: its event's key; a line that is no such event (it will be
    quarantined) is keyed by its own digest, which spreads such lines over the partitions."""
    try:
        event = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        event = None
    key = event_key(event) if isinstance(event, dict) else None
    return key.encode() if key is not None else hashlib.sha1(line).hexdigest().encode()


def keyed_lines(lines: Iterable[bytes]) -> list[tuple[bytes, bytes]]:
    """``(key, line)`` pairs, ready for ``EventProducer.send``."""
    return [(line_key(line), line) for line in lines]
