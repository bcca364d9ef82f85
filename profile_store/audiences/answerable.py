"""Why the sketches cannot answer a leaf on some days, and the nearest range they can answer.

A leaf filtering on an attribute is answerable on a day when the day is built and the attribute
was kept there (a built day without the leaf's app and event answers zero users). The other
days have one exact cause each: the day is not built, the attribute was never seen in the
trimming window, or it was trimmed by one of the keep rule's two limits (too many distinct
values; too many distinct values for its appearances, the id-like test a partial first day
fails). A refusal names each cause of every refused leaf with its days and measures, and
proposes what every leaf of the query can answer, so that a user is not left guessing which
range would work, nor offered one that another criterion refuses: with one range shared by
the leaves, the largest run of days inside it that no leaf refuses; else (or when there is no
such day) the whole query moved by the nearest number of days that clears every leaf.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta

from profile_store.audiences.query import QueryError, days_between

NOT_BUILT = "not_built"
NEVER_SEEN = "never_seen"
NOT_KEPT = "not_kept"
"""Trimmed or never seen, on a day built before the sketches recorded which."""
TOO_MANY_VALUES = "too_many_values"
VALUES_TOO_DISTINCT = "values_too_distinct"
REASONS = (NOT_BUILT, NEVER_SEEN, TOO_MANY_VALUES, VALUES_TOO_DISTINCT, NOT_KEPT)

NEAREST_REACH_DAYS = 31
"""How far before or after a refused range the nearest answerable range is looked for."""


@dataclass(frozen=True)
class Cause:
    """One reason some days of a leaf (``leaf``, its JSON path) cannot be answered;
    ``measured`` holds, per trimmed day, the trimming's figures (distinct values, appearances,
    window and limits)."""

    reason: str
    days: tuple[date, ...]
    leaf: str
    attribute: str | None = None
    measured: tuple[dict, ...] = field(default=())

    def to_dict(self) -> dict:
        return {
            "leaf": self.leaf,
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
    days = measured["window_days"]
    window = f"{days} day" if days == 1 else f"{days} days"
    if reason == TOO_MANY_VALUES:
        return f"{distinct} distinct values in {window}, more than {measured['max_distinct']}"
    appearances = measured["appearances"]
    ratio = distinct / appearances if appearances else 1.0
    return (
        f"{distinct} distinct values in {appearances} appearances over {window}: a ratio of "
        f"{ratio:.2f}, not below {measured['max_distinct_ratio']}, with more than "
        f"{measured['few_values']} values, so it looks like an id"
    )


@dataclass(frozen=True)
class Proposal:
    """What every leaf can answer instead: ``first`` .. ``last``; ``shift_days`` when that is
    the whole query moved by so many days (negative: earlier), None when it is a part of the
    asked range."""

    first: date
    last: date
    shift_days: int | None = None


class UnanswerableQuery(QueryError):
    """A valid query the sketches cannot answer: the ``causes`` of every refused leaf,
    ``answerable``, the range proposed instead (None: nothing nearby can be answered), and
    ``shift_days`` when that range is the whole query moved."""

    def __init__(
        self,
        path: str,
        problem: str,
        causes: list[Cause],
        answerable: tuple[date, date] | None,
        shift_days: int | None = None,
    ) -> None:
        super().__init__(path, problem)
        self.causes = causes
        self.answerable = answerable
        self.shift_days = shift_days

    def details(self) -> dict:
        """The causes and the proposal, as the HTTP error body and ``--json`` carry them."""
        answerable = None
        if self.answerable is not None:
            first, last = self.answerable
            answerable = {"date_from": first.isoformat(), "date_to": last.isoformat()}
        return {
            "causes": [cause.to_dict() for cause in self.causes],
            "answerable_range": answerable,
            "answerable_shift_days": self.shift_days,
        }


def attribute_causes(
    leaf: str,
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
        Cause(reason, tuple(days), leaf, name, tuple(measured.get(reason, ())))
        for reason, days in by_reason.items()
    ]


def refusal_message(causes: list[Cause], names: dict[str, str], proposed: str) -> str:
    """Per refused leaf (``names`` gives each leaf's name by path), one sentence for its
    unbuilt days and one per attribute; then ``proposed``."""
    parts = []
    for leaf in dict.fromkeys(cause.leaf for cause in causes):
        parts += _leaf_sentences(names[leaf], [c for c in causes if c.leaf == leaf])
    parts.append(proposed)
    return "; ".join(parts)


def _leaf_sentences(leaf_name: str, causes: list[Cause]) -> list[str]:
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
    return parts


def propose(
    ranges: Sequence[tuple[date, date]],
    refused: Iterable[date],
    refused_around: Callable[[], Sequence[Collection[date]]],
) -> Proposal | None:
    """What every leaf (of the date ``ranges``; ``refused``: the days some leaf refuses) can
    answer. Leaves sharing one range: the largest run of its days that none refuses; else, or
    without such a day, the query moved by the nearest shift that clears every leaf.
    ``refused_around`` gives each leaf's refused days within ``NEAREST_REACH_DAYS`` of its
    range; it is called only when a shift is needed (it costs reads)."""
    if len(set(ranges)) == 1:
        first, last = ranges[0]
        refused_days = set(refused)
        run = largest_run(d for d in days_between(first, last) if d not in refused_days)
        if run is not None:
            return Proposal(*run)
    shift = nearest_shift(ranges, refused_around(), NEAREST_REACH_DAYS)
    if shift is None:
        return None
    moved = timedelta(days=shift)
    first = min(first for first, _ in ranges)
    last = max(last for _, last in ranges)
    return Proposal(first + moved, last + moved, shift)


def proposal_sentence(proposal: Proposal | None, ranges: Sequence[tuple[date, date]]) -> str:
    """The proposal in words; for a query of several leaves, over every criterion."""
    shared = len(set(ranges)) == 1
    if proposal is None and shared:
        first, last = ranges[0]
        every = " for every criterion" if len(ranges) > 1 else ""
        return f"no range of {(last - first).days + 1} days nearby can be answered{every}"
    if proposal is None:
        return f"no shift of the query within {NEAREST_REACH_DAYS} days can be answered"
    if shared or proposal.shift_days is None:
        every = " every criterion over" if len(ranges) > 1 else ""
        return f"the sketches can answer{every} {proposal.first} .. {proposal.last}"
    days = abs(proposal.shift_days)
    direction = "earlier" if proposal.shift_days < 0 else "later"
    return (
        f"the sketches can answer the query moved {days} day{'s' * (days != 1)} {direction} "
        f"({proposal.first} .. {proposal.last})"
    )


def largest_run(days: Iterable[date]) -> tuple[date, date] | None:
    """The longest run of consecutive days (the latest of equally long runs)."""
    best: tuple[date, date] | None = None
    run: tuple[date, date] | None = None
    for day in sorted(set(days)):
        run = (day, day) if run is None or day != run[1] + timedelta(days=1) else (run[0], day)
        if best is None or (day - run[0]) >= (best[1] - best[0]):
            best = run
    return best


def nearest_shift(
    ranges: Sequence[tuple[date, date]], refused: Sequence[Collection[date]], reach: int
) -> int | None:
    """The number of days (at most ``reach``; the earlier of two equally near) that moves every
    range off all of its refused days (``refused[i]``: those of range i)."""
    ordered = [sorted(days) for days in refused]

    def clear(shift: int) -> bool:
        moved = timedelta(days=shift)
        for (first, last), days in zip(ranges, ordered, strict=True):
            i = bisect_left(days, first + moved)
            if i < len(days) and days[i] <= last + moved:
                return False
        return True

    for distance in range(1, reach + 1):
        for shift in (-distance, distance):
            if clear(shift):
                return shift
    return None


def shown_days(days: Iterable[date]) -> str:
    days = list(days)
    shown = ", ".join(d.isoformat() for d in days[:10])
    return shown + (f" and {len(days) - 10} more" if len(days) > 10 else "")
