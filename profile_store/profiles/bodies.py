"""The JSON bodies of the profile reads: what the HTTP API returns and ``--json`` prints.

Times are ISO-8601 strings in UTC (``2026-11-18T09:46:40.000Z``), as everywhere the service
answers; the epoch milliseconds a program may prefer stay beside them, in ``*_ms`` fields
(``first_seen_ms``, ``segments_expiry_ms``, ...).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from profile_store.profiles.reads import ProfileSegments, ProfileView, SegmentsBatch


def iso_utc(epoch_ms: int) -> str:
    """``epoch_ms`` as ISO-8601 UTC with milliseconds and a ``Z``."""
    moment = datetime.fromtimestamp(epoch_ms / 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{epoch_ms % 1000:03d}Z"


def expiries(segments: dict[str, int]) -> dict[str, str]:
    """Segment -> expiry, as ISO-8601 UTC."""
    return {segment: iso_utc(expiry) for segment, expiry in segments.items()}


def profile_body(view: ProfileView) -> dict[str, Any]:
    return {
        "profile": view.profile,
        "id_type": view.id_type,
        "master": view.master,
        "is_master": view.is_master,
        "first_seen": iso_utc(view.first_seen_ms),
        "first_seen_ms": view.first_seen_ms,
        "devices": view.devices,
        "as_of": iso_utc(view.as_of_ms),
        "as_of_ms": view.as_of_ms,
        "now": iso_utc(view.now_ms),
        "now_ms": view.now_ms,
        "segments": expiries(view.segments),
        "segments_expiry_ms": view.segments,
        "unsynced": expiries(view.unsynced),
        "unsynced_expiry_ms": view.unsynced,
        "counters": view.counters,
        "linked": view.linked,
    }


def segments_body(answer: ProfileSegments, key_type: str | None) -> dict[str, Any]:
    return {
        "id": answer.id,
        "key_type": key_type,
        "profile": answer.profile,
        "via_lookup": answer.via_lookup,
        "segments": expiries(answer.segments),
        "segments_expiry_ms": answer.segments,
    }


def batch_body(batch: SegmentsBatch) -> dict[str, Any]:
    return {
        "segments": {id: expiries(segments) for id, segments in batch.segments.items()},
        "segments_expiry_ms": batch.segments,
        "unknown": batch.unknown,
    }
