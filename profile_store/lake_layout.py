"""Paths inside the lake, relative to its root, so every reader and writer agrees on them.

```
landing/date=YYYY-MM-DD/part-*.jsonl.gz   raw event batches as they arrive, _SUCCESS when complete
events/date=YYYY-MM-DD/*.parquet          validated, deduplicated events of that UTC day
quarantine/date=YYYY-MM-DD/*.parquet      rejected rows of that day, each with a reason
attribute_stats/date=YYYY-MM-DD/          per (app, event, attribute): appearances, value HLL
trimmed_attributes/date=YYYY-MM-DD/       the keep/trim decision of that day (trailing window)
audience_sketches/date=YYYY-MM-DD/        pairs.json: the (app, event) pairs written to HBase
ground_truth/                             the generator's answer key (evaluation only)
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
GROUND_TRUTH = "ground_truth"
SUCCESS_MARKER = "_SUCCESS"


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
