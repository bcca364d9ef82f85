"""Row keys of the ``sketches`` table.

```
app|event_type|yyyymmdd|attr_hash16          one kept-attribute combination (or the aggregate)
app|event_type|yyyymmdd|~|attribute          marker: the attribute was kept that day
app|event_type|yyyymmdd|~|attribute|value    marginal: every user with attribute = value
app|event_type|yyyymmdd|~~|a1|a2             marker: the day has pair rows of (a1, a2)
app|event_type|yyyymmdd|~~|a1|a2|v1|v2       pair: every user with a1 = v1 and a2 = v2 on
                                             one event (a1 < a2)
|built|yyyymmdd                              marker: every row of the day is written
```

Event before date, so that one leaf's whole date range is ONE contiguous scan; every row of a
day shares the day's prefix, so re-materializing a day finds all of its earlier rows. ``~``
sorts after the hex hashes: the marginal rows of a day follow its combinations, and the pair
rows (``~~``, since ``~`` sorts after ``|``) follow the marginals. Names and
values are percent-encoded (``%`` and ``|`` only), which keeps keys readable in the HBase shell
while making ``|`` a true separator: no name can run into the next component. An app id is never
empty, so no sketch row starts with ``|``: the built-day markers have that corner of the key
space to themselves, outside every leaf's range.
"""

from __future__ import annotations

from datetime import date, timedelta
from urllib.parse import unquote

SEPARATOR = "|"
AGGREGATE_HASH = "0" * 16
MARGINAL_MARK = "~"
PAIR_MARK = "~~"


def encode_component(value: str) -> str:
    """Percent-encode the two characters that would break the key structure."""
    if not value:
        raise ValueError("row key component: must be a non-empty string")
    return value.replace("%", "%25").replace("|", "%7C")


def encode_value(value: str) -> str:
    """Like ``encode_component``, but an attribute value may be empty."""
    return value.replace("%", "%25").replace("|", "%7C")


def decode_component(value: str) -> str:
    return unquote(value)


def day_component(day: date) -> str:
    return day.strftime("%Y%m%d")


def sketch_rowkey(app_id: str, event_type: str, day: date, attr_hash: str) -> bytes:
    if len(attr_hash) != 16:
        raise ValueError(f"attr_hash: expected 16 hex characters, got {attr_hash!r}")
    parts = (encode_component(app_id), encode_component(event_type), day_component(day), attr_hash)
    return SEPARATOR.join(parts).encode()


def aggregate_rowkey(app_id: str, event_type: str, day: date) -> bytes:
    return sketch_rowkey(app_id, event_type, day, AGGREGATE_HASH)


def kept_marker_rowkey(app_id: str, event_type: str, day: date, attribute: str) -> bytes:
    """The row proving that ``attribute`` was kept on ``day`` (so its marginals are complete)."""
    return (
        day_prefix(app_id, event_type, day)
        + (MARGINAL_MARK + SEPARATOR + encode_component(attribute)).encode()
    )


def marginal_rowkey(app_id: str, event_type: str, day: date, attribute: str, value: str) -> bytes:
    """The row of every user of (app, event, day) whose event had ``attribute`` = ``value``."""
    return (
        kept_marker_rowkey(app_id, event_type, day, attribute)
        + (SEPARATOR + encode_value(value)).encode()
    )


def pair_marker_rowkey(
    app_id: str, event_type: str, day: date, attributes: tuple[str, str]
) -> bytes:
    """The row proving that ``day`` has the pair rows of two kept attributes (sorted names)."""
    first, second = attributes
    if not first < second:
        raise ValueError(f"pair attributes: expected two names in order, got {attributes!r}")
    names = SEPARATOR.join((PAIR_MARK, encode_component(first), encode_component(second)))
    return day_prefix(app_id, event_type, day) + names.encode()


def pair_rowkey(app_id: str, event_type: str, day: date, filters: dict[str, str]) -> bytes:
    """The row of every user of (app, event, day) with both attribute values on one event."""
    first, second = sorted(filters)
    values = SEPARATOR + encode_value(filters[first]) + SEPARATOR + encode_value(filters[second])
    return pair_marker_rowkey(app_id, event_type, day, (first, second)) + values.encode()


def built_day_rowkey(day: date) -> bytes:
    """The row proving that ``day``'s sketches are complete: a pair without rows had no users."""
    return (SEPARATOR + "built" + SEPARATOR + day_component(day)).encode()


def day_prefix(app_id: str, event_type: str, day: date) -> bytes:
    """Prefix of every row of one (app, event, day)."""
    return (
        SEPARATOR.join((encode_component(app_id), encode_component(event_type), day_component(day)))
        + SEPARATOR
    ).encode()


def leaf_scan_range(
    app_id: str, event_type: str, date_from: date, date_to: date
) -> tuple[bytes, bytes]:
    """[start, stop) covering every row of (app, event) from ``date_from`` to ``date_to``."""
    return (
        day_prefix(app_id, event_type, date_from),
        day_prefix(app_id, event_type, date_to + timedelta(days=1)),
    )


def parse_rowkey(key: bytes) -> tuple[str, str, date, str]:
    app, event, day, attr_hash = key.decode().split(SEPARATOR)
    parsed_day = date(int(day[:4]), int(day[4:6]), int(day[6:8]))
    return decode_component(app), decode_component(event), parsed_day, attr_hash
