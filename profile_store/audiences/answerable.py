"""Why the sketches cannot answer a leaf on some days, and the nearest range they can answer.

A leaf filtering on an attribute is answerable on a day when the day is built and the attribute
was kept there (a built day without the leaf's app and event answers zero users). The other
days have one exact cause each: the day is not built, the attribute was never seen in the
trimming window, or it was trimmed by one of the keep rule's two limits (too many distinct
values; too many distinct values for its appearances, the id-like test a partial first day
fails). A refusal names each cause with its days and measures, and proposes a range: the
largest run of answerable days inside the asked one, else the nearest answerable range of the
same length, so that a user is not left guessing which range would work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

from profile_store.audiences.query import QueryError

NOT_BUILT = "not_built"
NEVER_SEEN = "never_seen"
NOT_KEPT = "not_kept"
"""Trimmed or never seen, on a day built before the sketches recorded which."""
TOO_MANY_VALUES = "too_many_values"
VALUES_TOO_DISTINCT = "values_too_distinct"
REASONS = (NOT_BUILT, NEVER_SEEN, TOO_MANY_VALUES, VALUES_TOO_DISTINCT, NOT_KEPT)


@dataclass(frozen=True)
class Cause:
    """One reason some days of a leaf cannot be answered; ``measured`` holds, per trimmed day,
    the trimming's figures (distinct values, appearances, window and limits)."""

    reason: str
    days: tuple[date, ...]
    attribute: str | None = None
    measured: tuple[dict, ...] = field(default=())

    def to_dict(self) -> dict:
        return {
            "reason": self.reason,
            "attribute": self.attribute,
            "days": [day.isoformat() for day in self.days],
            "measured": list(self.measured),
        }

    def describe(self) -> str:
        days = shown_days(self.days)
        if self.reason == NOT_BUILT:
            return f"not built yet on {days}"
        if self.reason == NEVER_SEEN:
            return f"never seen on {days} (no event carried it in the trimming window)"
        if self.reason == NOT_KEPT:
            return f"trimmed or never seen on {days} (built before the cause was recorded)"
        return f"trimmed on {days} ({trim_rule(self.reason, self.measured[0])})"


def trim_rule(reason: str, measured: dict) -> str:
    """The keep rule's limit the attribute crossed, with its figures (those of the first day)."""
    distinct = measured["distinct_values"]
    window = f"{measured['window_days']}-day window"
    if reason == TOO_MANY_VALUES:
        return f"{distinct} distinct values in the {window}, more than {measured['max_distinct']}"
    appearances = measured["appearances"]
    ratio = distinct / appearances if appearances else 1.0
    return (
        f"{distinct} distinct values in {appearances} appearances in the {window}: a ratio of "
        f"{ratio:.2f}, not below {measured['max_distinct_ratio']}, with more than "
        f"{measured['few_values']} values, so it looks like an id"
    )


class UnanswerableQuery(QueryError):
    """A valid leaf the sketches cannot answer: its ``causes``, and ``answerable``, the range
    proposed instead (None: no range of the same length nearby can be answered)."""

    def __init__(
        self, path: str, problem: str, causes: list[Cause], answerable: tuple[date, date] | None
    ) -> None:
        super().__init__(path, problem)
        self.causes = causes
        self.answerable = answerable

    def details(self) -> dict:
        """The causes and the proposed range, as the HTTP error body and ``--json`` carry them."""
        answerable = None
        if self.answerable is not None:
            first, last = self.answerable
            answerable = {"date_from": first.isoformat(), "date_to": last.isoformat()}
        return {
            "causes": [cause.to_dict() for cause in self.causes],
            "answerable_range": answerable,
        }


def attribute_causes(
    name: str,
    kept_by_day: dict[date, set[str]],
    trimmed_by_day: dict[date, dict[str, dict] | None],
) -> list[Cause]:
    """The days (among those holding the leaf's app and event) where ``name`` was not kept,
    grouped by reason in day order of their first day; a day whose trimmed attributes are
    None was built before they were recorded."""
    by_reason: dict[str, list[date]] = {}
    measured: dict[str, list[dict]] = {}
    for day in sorted(kept_by_day):
        if name in kept_by_day[day]:
            continue
        recorded = trimmed_by_day.get(day)
        trimmed = None if recorded is None else recorded.get(name)
        if recorded is None:
            reason = NOT_KEPT
        elif trimmed and trimmed.get("reason") in (TOO_MANY_VALUES, VALUES_TOO_DISTINCT):
            reason = trimmed["reason"]
        else:
            reason = NEVER_SEEN
        by_reason.setdefault(reason, []).append(day)
        if trimmed is not None and reason == trimmed.get("reason"):
            measured.setdefault(reason, []).append({"day": day.isoformat(), **trimmed})
    return [
        Cause(reason, tuple(days), name, tuple(measured.get(reason, ())))
        for reason, days in by_reason.items()
    ]


def refusal_message(leaf_name: str, causes: list[Cause], answerable: tuple[date, date] | None,
                    length: int) -> str:  # fmt: skip
    """One sentence per attribute (or the unbuilt days), then the range proposed."""
    parts = []
    unbuilt = [cause for cause in causes if cause.attribute is None]
    if unbuilt:
        days = shown_days(unbuilt[0].days)
        parts.append(
            f"no sketches for {leaf_name} on {days}: the day is not built yet "
            "(materialize audience_sketches for it)"
        )
    attributes = sorted({cause.attribute for cause in causes if cause.attribute is not None})
    for name in attributes:
        described = ", ".join(c.describe() for c in causes if c.attribute == name)
        parts.append(f"attribute {name!r} of {leaf_name} cannot be filtered on: {described}")
    if answerable is None:
        parts.append(f"no range of {length} days nearby can be answered")
    else:
        parts.append(f"the sketches can answer {answerable[0]} .. {answerable[1]}")
    return "; ".join(parts)


def largest_run(days: Iterable[date]) -> tuple[date, date] | None:
    """The longest run of consecutive days (the latest of equally long runs)."""
    best: tuple[date, date] | None = None
    run_start: date | None = None
    previous: date | None = None
    for day in sorted(set(days)):
        if previous is None or day != previous + timedelta(days=1):
            run_start = day
        previous = day
        if best is None or (day - run_start) >= (best[1] - best[0]):
            best = (run_start, day)
    return best


def nearest_range(
    answerable: Callable[[date], bool], first: date, length: int, reach: int
) -> tuple[date, date] | None:
    """The range of ``length`` days nearest to the one starting on ``first`` (at most ``reach``
    days away, the earlier of two equally near) whose every day is answerable."""
    for shift in range(1, reach + 1):
        for start in (first - timedelta(days=shift), first + timedelta(days=shift)):
            days = [start + timedelta(days=i) for i in range(length)]
            if all(answerable(day) for day in days):
                return start, days[-1]
    return None


def shown_days(days: Iterable[date]) -> str:
    days = list(days)
    shown = ", ".join(d.isoformat() for d in days[:10])
    return shown + (f" and {len(days) - 10} more" if len(days) > 10 else "")
