"""Paths inside the lake, relative to its root, so every reader and writer agrees on them.

```
landing/date=YYYY-MM-DD/part-*.jsonl.gz   raw event batches as they arrive, _SUCCESS when complete
events/date=YYYY-MM-DD/*.parquet          validated, deduplicated events of that UTC day
quarantine/date=YYYY-MM-DD/*.parquet      rejected rows of that day, each with a reason
attribute_stats/date=YYYY-MM-DD/          per (app, event, attribute): appearances, value HLL
trimmed_attributes/date=YYYY-MM-DD/       the keep/trim decision of that day (trailing window)
audience_sketches/date=YYYY-MM-DD/        pairs.json: the (app, event) pairs written to HBase
audience_leaf_counts/date=YYYY-MM-DD/     users per leaf shape, read by the accuracy check
ground_truth/                             the generator's answer key (evaluation only)
config/segment_rules.json                 the segment rules in force (absent: the built-in ones)
```
"""

from __future__ import annotations

from datetime import date

LANDING = "landing"
EVENTS = "events"
QUARANTINE = "quarantine"
ATTRIBUTE_STATS = "attribute_stats"
TRIMMED_ATTRIBUTES = "trimmed_attributes"
AUDIENCE_SKETCHES = "audience_sketches"
AUDIENCE_LEAF_COUNTS = "audience_leaf_counts"
GROUND_TRUTH = "ground_truth"
SUCCESS_MARKER = "_SUCCESS"
SEGMENT_RULES = "config/segment_rules.json"


def day_dir(area: str, day: date | str) -> str:
    """``area/date=YYYY-MM-DD``: one directory per UTC day in every area of the lake."""
    day_text = day.isoformat() if isinstance(day, date) else date.fromisoformat(day).isoformat()
    return f"{area}/date={day_text}"


def landing_day(day: date | str) -> str:
    return day_dir(LANDING, day)


def events_day(day: date | str) -> str:
    return day_dir(EVENTS, day)


def quarantine_day(day: date | str) -> str:
    return day_dir(QUARANTINE, day)


# Identity graph areas (see profile_store/identity):
#   identity_keys/date=D/        per (key_type, key, profile): first/last seen that day, events
#   identity_profiles/date=D/    per profile seen that day: first/last seen, events
#   identity_edges/date=D/       bridging edges of the day (sorted pair, rule, weight, seen)
#   identity_quarantine/date=D/  bridging keys that made no edge: blocklist or super-node
#   identity_components/date=D/  assignment profile -> master after day D; _LATEST names the latest
IDENTITY_KEYS = "identity_keys"
IDENTITY_PROFILES = "identity_profiles"
IDENTITY_EDGES = "identity_edges"
IDENTITY_QUARANTINE = "identity_quarantine"
IDENTITY_COMPONENTS = "identity_components"
IDENTITY_COMPONENTS_LATEST = "identity_components/_LATEST"

# Compacted profiles (see profile_store/profiles):
#   segment_feed/date=D/*.jsonl   optional feed: {"profile", "segment", "expires_at"} per line
#   profile_unsynced/date=D/      u: cells consumed from HBase by the compaction of day D
#   profile_segments/date=D/      per (profile, segment): expiry, not expired at the end of D
#   profile_counters/date=D/      per (profile, event type): decaying counter after day D
#   compacted_profiles/date=D/    per rewritten profile: its master (what day D wrote to HBase)
SEGMENT_FEED = "segment_feed"
# audience_activations/date=D/  per member of an activated saved audience on day D: the segment
#                               and its expiry (profile, segment, expiry_ms, tenant, audience_id)
AUDIENCE_ACTIVATIONS = "audience_activations"
PROFILE_UNSYNCED = "profile_unsynced"
PROFILE_SEGMENTS = "profile_segments"
PROFILE_COUNTERS = "profile_counters"
COMPACTED_PROFILES = "compacted_profiles"
