"""A fixed-seed mix of realistic audience queries, for accuracy checks and benchmarks.

The mix follows what marketers ask: single leaves over a few days, unions of
events, intersections of a large and a small set ("installed AND purchased"), differences
("added to cart BUT NOT purchased"), "at least N times" leaves, and attribute filters, in trees
of one to four leaves; and intersections and differences of small sets (narrow leaves of the
smaller event types: one day, an attribute value, at least twice), where a sketch's error
relative to the answer is largest.

When a day's sketches are mostly below their capacity, few of that mix estimate; the accuracy
check then asks ``sample_estimating_queries``: the same shapes, each tree built around a pair
whose sketches estimate, so that estimation is judged whenever the day's sketches estimate.

No question is asked twice (``AskedTrees``): a repeated tree, or one that names a leaf twice (a
leaf intersected with itself is the leaf), would count one answer's error several times.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from profile_store.audiences.query import canonical_form, leaf_identity, leaves, parse_query

DRAWS_PER_TREE = 20  # trees drawn per distinct tree wanted before a small catalog gives up


@dataclass(frozen=True)
class CatalogEntry:
    """One (app, event type) that queries may name, with attributes kept on every day."""

    app_id: str
    event_type: str
    users: int
    attributes: dict[str, list[str]] = field(default_factory=dict)


def build_catalog(
    events: DataFrame, decisions: DataFrame, max_values: int = 5
) -> list[CatalogEntry]:
    """Catalog of ``events`` (the query days) and ``decisions`` (their trim decisions), read
    from the events themselves (``window_counts.CountedWindow`` reads it from the days' leaf
    counts instead)."""
    kept = always_kept(decisions)
    value_events: dict[tuple[str, str, str], dict[str, int]] = {}
    if kept:
        kept_table = events.sparkSession.createDataFrame(
            [(app, event, attributes) for (app, event), attributes in sorted(kept.items())],
            "app_id string, event_type string, kept array<string>",
        )
        # Only the kept attributes are exploded: most of an event's attributes are trimmed ones.
        offered = F.map_filter(
            "event_attributes", lambda k, v: F.array_contains("kept", k) & v.isNotNull()
        )
        values = (
            events.join(F.broadcast(kept_table), ["app_id", "event_type"])
            .select("app_id", "event_type", F.explode(offered).alias("attribute", "v"))
            .groupBy("app_id", "event_type", "attribute", "v")
            .count()
        )
        for row in values.collect():
            value_events.setdefault((row.app_id, row.event_type, row.attribute), {})[row.v] = row[
                "count"
            ]
    # Users as the exact side counts them: distinct hashes of user_id.
    users = events.groupBy("app_id", "event_type").agg(
        F.count_distinct(F.xxhash64("user_id")).alias("users")
    )
    pair_users = {(row.app_id, row.event_type): row.users for row in users.collect()}
    return catalog_of(kept, value_events, pair_users, max_values)


def catalog_of(
    kept: dict[tuple[str, str], list[str]],
    value_events: dict[tuple[str, str, str], dict[str, int]],
    pair_users: dict[tuple[str, str], int],
    max_values: int = 5,
) -> list[CatalogEntry]:
    """The catalog from what the days hold: the attributes ``kept`` on every day, events per
    kept attribute value, users per pair.

    Every (app, event type) with users is offered, also pairs absent on some of the days (real
    traffic is sparse: those days count zero users, as the engine answers them). Attributes are
    offered (with their ``max_values`` most frequent values) when kept on every day the pair has
    a decision, so that every sampled query is answerable.
    """
    catalog = []
    for app, event in sorted(pair_users):
        attributes = {
            attribute: [
                v
                for v, _ in sorted(
                    value_events.get((app, event, attribute), {}).items(),
                    key=lambda pair: (-pair[1], pair[0]),
                )[:max_values]
            ]
            for attribute in sorted(kept.get((app, event), []))
            if value_events.get((app, event, attribute))
        }
        catalog.append(CatalogEntry(app, event, pair_users[(app, event)], attributes))
    return catalog


def always_kept(decisions: DataFrame) -> dict[tuple[str, str], list[str]]:
    """(app, event type) -> the attributes kept on every day the pair has a decision, sorted.

    Decisions are a row per pair, attribute and day: few enough to decide in the driver, where
    Spark would take a job per shuffle of its three small aggregations."""
    pair_days: dict[tuple[str, str], set[date]] = {}
    kept_days: dict[tuple[str, str, str], set[date]] = {}
    for row in decisions.select("app_id", "event_type", "attribute", "date", "kept").collect():
        pair = (row.app_id, row.event_type)
        pair_days.setdefault(pair, set()).add(row.date)
        if row.kept:
            kept_days.setdefault((*pair, row.attribute), set()).add(row.date)
    kept: dict[tuple[str, str], list[str]] = {}
    for (app, event, attribute), days in sorted(kept_days.items()):
        if days == pair_days[(app, event)]:
            kept.setdefault((app, event), []).append(attribute)
    return kept


class AskedTrees:
    """The questions asked so far, by canonical form: a tree is new when no tree of its form was
    asked and it names no leaf twice."""

    def __init__(self) -> None:
        self.forms: set[tuple] = set()

    def ask(self, tree: dict) -> bool:
        """Whether ``tree`` is new; a new one counts as asked from now on."""
        query = parse_query(tree)
        named = [leaf_identity(leaf) for leaf in leaves(query)]
        form = canonical_form(query)
        if len(set(named)) < len(named) or form in self.forms:
            return False
        self.forms.add(form)
        return True

    def first_new(self, trees: Iterable[dict], count: int) -> list[dict]:
        """The first ``count`` new trees of ``trees`` (fewer when it runs out)."""
        kept: list[dict] = []
        for tree in trees:
            if len(kept) == count:
                break
            if self.ask(tree):
                kept.append(tree)
        return kept


def sample_queries(
    catalog: list[CatalogEntry],
    days: list[date],
    count: int,
    seed: int = 20261101,
    asked: AskedTrees | None = None,
) -> list[dict]:
    """``count`` distinct query trees over ``days`` (consecutive), none of ``asked``,
    deterministic for ``seed``; fewer when the catalog cannot make so many."""
    if not catalog or not days:
        raise ValueError("sample_queries: needs a non-empty catalog and at least one day")
    rng = random.Random(seed)
    by_app = _by_app(catalog)
    apps = sorted(by_app)
    draws = (
        _sample_one(rng, by_app[rng.choice(apps)], days) for _ in range(count * DRAWS_PER_TREE)
    )
    return (asked or AskedTrees()).first_new(draws, count)


def sample_estimating_queries(
    catalog: list[CatalogEntry],
    estimating: set[tuple[str, str]],
    days: list[date],
    count: int,
    seed: int = 20261101,
    asked: AskedTrees | None = None,
) -> list[dict]:
    """``count`` distinct query trees over ``days``, none of ``asked``, each with a leaf of an
    ``estimating`` (app, event type): alone, in a union, or the large side of an intersection, a
    difference or a tree (against a whole leaf or a narrow one-day one). Deterministic for
    ``seed``; fewer when the catalog cannot make so many."""
    large = [entry for entry in catalog if (entry.app_id, entry.event_type) in estimating]
    if not large or not days:
        raise ValueError("sample_estimating_queries: needs an estimating pair and a day")
    rng = random.Random(f"estimating-{seed}")
    by_app = _by_app(catalog)
    draws = (_estimating_one(rng, large, by_app, days) for _ in range(count * DRAWS_PER_TREE))
    return (asked or AskedTrees()).first_new(draws, count)


def _by_app(catalog: list[CatalogEntry]) -> dict[str, list[CatalogEntry]]:
    by_app: dict[str, list[CatalogEntry]] = {}
    for entry in catalog:
        by_app.setdefault(entry.app_id, []).append(entry)
    return by_app


def _estimating_one(
    rng: random.Random,
    large: list[CatalogEntry],
    by_app: dict[str, list[CatalogEntry]],
    days: list[date],
) -> dict:
    big = rng.choice(large)
    others = [e for e in by_app[big.app_id] if e != big] or [big]
    date_from, date_to = _date_range(rng, days)
    shape = rng.choice(("leaf", "union", "intersection", "difference", "narrow", "tree"))
    first = _leaf(rng, big, date_from, date_to)
    if shape == "leaf":
        return first
    if shape in ("union", "intersection", "difference"):
        return {shape: [first, _leaf(rng, rng.choice(others), date_from, date_to)]}
    if shape == "narrow":
        day = rng.choice(days)
        whole = _leaf(rng, big, day, day)
        narrow = _narrow_leaf(rng, rng.choice(others), day)
        return {rng.choice(("intersection", "difference")): [whole, narrow]}
    inner = {"union": [first, _leaf(rng, rng.choice(others), date_from, date_to)]}
    last = _leaf(rng, rng.choice(others), date_from, date_to)
    return {rng.choice(("intersection", "difference")): [inner, last]}


_SHAPES = ("leaf", "leaf", "union", "intersection", "intersection", "difference", "tree", "small")


def _sample_one(rng: random.Random, entries: list[CatalogEntry], days: list[date]) -> dict:
    date_from, date_to = _date_range(rng, days)
    shape = rng.choice(_SHAPES)

    def leaf(entry: CatalogEntry | None = None) -> dict:
        return _leaf(rng, entry or rng.choice(entries), date_from, date_to)

    if shape == "leaf" or len(entries) < 2:
        return leaf()
    if shape == "union":
        picks = rng.sample(entries, min(len(entries), rng.choice((2, 3))))
        return {"union": [leaf(e) for e in picks]}
    if shape in ("intersection", "difference"):
        big, small = _big_and_small(rng, entries)
        return {shape: [leaf(big), leaf(small)]}
    if shape == "small":
        smaller = sorted(entries, key=lambda e: (e.users, e.app_id, e.event_type))
        a, b = rng.sample(smaller[: max(2, len(smaller) // 2)], 2)
        day = rng.choice(days)
        narrow = [_narrow_leaf(rng, e, day) for e in (a, b)]
        return {rng.choice(("intersection", "difference")): narrow}
    a, b, c = (rng.choice(entries) for _ in range(3))
    inner = {rng.choice(("union", "intersection")): [leaf(a), leaf(b)]}
    return {rng.choice(("intersection", "difference")): [inner, leaf(c)]}


def _date_range(rng: random.Random, days: list[date]) -> tuple[date, date]:
    span = min(len(days), rng.choice((1, 1, 2, 3, 7, 7, 30)))
    start = rng.randrange(0, len(days) - span + 1)
    return days[start], days[start] + timedelta(days=span - 1)


def _big_and_small(
    rng: random.Random, entries: list[CatalogEntry]
) -> tuple[CatalogEntry, CatalogEntry]:
    a, b = rng.sample(entries, 2)
    return (a, b) if a.users >= b.users else (b, a)


def _narrow_leaf(rng: random.Random, entry: CatalogEntry, day: date) -> dict:
    """One day of an event type, narrowed by an attribute value when it has one, else by a
    minimum count: a small set."""
    leaf: dict = {
        "app_id": entry.app_id,
        "event_type": entry.event_type,
        "date_from": day.isoformat(),
        "date_to": day.isoformat(),
    }
    if entry.attributes:
        name = rng.choice(sorted(entry.attributes))
        leaf["attributes"] = {name: rng.choice(entry.attributes[name])}
    else:
        leaf["min_count"] = 2
    return leaf


def _leaf(rng: random.Random, entry: CatalogEntry, date_from: date, date_to: date) -> dict:
    leaf: dict = {
        "app_id": entry.app_id,
        "event_type": entry.event_type,
        "date_from": date_from.isoformat(),
        "date_to": date_to.isoformat(),
    }
    if entry.attributes and rng.random() < 0.35:
        name = rng.choice(sorted(entry.attributes))
        leaf["attributes"] = {name: rng.choice(entry.attributes[name])}
    if rng.random() < 0.2:
        leaf["min_count"] = rng.choice((2, 3, 5))
    return leaf
