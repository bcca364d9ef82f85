"""A person to forget, planted in a generated lake: several ids, several days, and a bridge.

| person | ids | login | email on their events |
| --- | --- | --- | --- |
| P (forgotten) | p-cookie, p-idfa | login-p | a's on p-cookie, b's on p-idfa |
| A | a-cookie, a-gaid | login-a | a's on a-cookie |
| B | b-cookie, b-gaid | login-b | b's on b-cookie |

Each id has one ``add_to_cart`` and one ``purchase`` a day; P also sends one line with an empty
event type (quarantined, naming p-cookie).

The shared emails make one component of all six ids (P bridges A and B) whose master is
p-cookie, the oldest profile. Forgetting p-cookie must take p-idfa too (same login), and leave
A and B as two components with masters a-cookie and b-cookie.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import date, datetime, timedelta
from pathlib import Path

APP = "com.shopfast.android"
P_IDS = ["p-cookie-0001", "P-IDFA-0002"]  # an IDFA in its one spelling (upper-case)
A_IDS = ["a-cookie-0001", "a-gaid-0002"]
B_IDS = ["b-cookie-0001", "b-gaid-0002"]
LOGINS = {"p": "login-p-7f31", "a": "login-a-22c9", "b": "login-b-91d0"}
EMAIL_A = hashlib.sha256(b"a@example.com").hexdigest()
EMAIL_B = hashlib.sha256(b"b@example.com").hexdigest()
ID_TYPES = {"cookie": "cookie", "idfa": "idfa", "gaid": "gaid"}
FORGOTTEN_TEXTS = [*P_IDS, LOGINS["p"]]


def _id_type(user_id: str) -> str:
    return user_id.split("-")[1].lower()


def _event(n: int, day: date, minute: int, user_id: str, login: str, emails: dict) -> dict:
    when = datetime(day.year, day.month, day.day) + timedelta(minutes=minute)
    return {
        "event_id": f"erasure-{day:%Y%m%d}-{n:04d}",
        "app_id": APP,
        "user_id": user_id,
        "id_type": _id_type(user_id),
        "event_time": when.isoformat() + "Z",
        "event_type": "purchase" if minute % 2 else "add_to_cart",
        "event_attributes": {"currency": "EUR"},
        "member_id": login,
        "alt_ids": emails,
        "ip": "10.1.2.3",
        "user_agent": "erasure-test",
    }


def scenario_events(day: date, first_day: bool) -> list[dict]:
    """The three persons' events of one day; on the first day P's come first (P is oldest)."""
    plan = [
        (P_IDS[0], LOGINS["p"], {"email_sha256": EMAIL_A}),
        (P_IDS[1], LOGINS["p"], {"email_sha256": EMAIL_B}),
        (A_IDS[0], LOGINS["a"], {"email_sha256": EMAIL_A}),
        (A_IDS[1], LOGINS["a"], {}),
        (B_IDS[0], LOGINS["b"], {"email_sha256": EMAIL_B}),
        (B_IDS[1], LOGINS["b"], {}),
    ]
    events = []
    for i, (user_id, login, emails) in enumerate(plan):
        for repeat in range(2):
            minute = (i * 3 + repeat) if first_day else 600 + i * 3 + repeat
            events.append(_event(len(events), day, minute, user_id, login, emails))
    return events


def plant(lake: Path, day: date, first_day: bool, only_p: bool = False) -> None:
    """Add the scenario's events to the day's landing files (and one bad line of P's)."""
    folder = lake / "landing" / f"date={day.isoformat()}"
    folder.mkdir(parents=True, exist_ok=True)
    events = scenario_events(day, first_day)
    if only_p:
        events = [e for e in events if e["user_id"] in P_IDS]
    lines = [json.dumps(e) for e in events]
    bad = dict(events[0], event_id=f"erasure-bad-{day:%Y%m%d}", event_type="")
    lines.append(json.dumps(bad))  # empty event type: quarantined, naming p-cookie
    with gzip.open(folder / "part-erasure.jsonl.gz", "wt") as out:
        out.write("\n".join(lines) + "\n")
    marker = folder / "_SUCCESS"
    marker.write_text("")  # after the file: the day's files are complete
