"""Answering audience queries from the ``sketches`` table.

Each leaf is ONE HBase round trip:

- without attribute filters, one multi-get of the days' aggregate rows;
- filtering on one attribute, one multi-get of the days' marginal rows of that value and the
  attribute's kept markers (a missing marker means trimmed or not built: the leaf then takes
  the scan below, which names the days; so do tables written before marginal rows existed);
- filtering on two attributes, one multi-get of the days' pair rows of those values and the
  attribute pair's markers (a missing marker, as for marginals, sends the leaf to the scan);
- filtering on more attributes, one scan over the contiguous date range (key order is app,
  event, day), filtered server-side on the attribute columns, with the day's aggregate rows
  riding along to prove that every day in range was built and kept the filtered attributes.

A day in range without the pair's aggregate row costs one more multi-get, of the days'
built-day markers: on a built day the pair had no users (real traffic is sparse: an app with no
installs on a Monday), so the day adds nothing; only days not built are refused.

A query with a refused leaf is refused whole, once every leaf is read: the refusal names each
leaf's causes and proposes what all of them answer; looking around the asked ranges for it
costs two multi-gets for all leaves together (answerable.py).

The sketches are unioned in C++; the tree is evaluated in C++; bounds are DataSketches' (2
standard deviations, about 95%). Unions keep up to 2^16 entries, more than a day's sketch
(lg_k 12): every hash the days' sketches hold below their common theta is a sample, so a
30-day leaf keeps several times the samples of one day, and its error is smaller than a
union capped at the day sketches' size would give; the estimate stays unbiased.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import date, timedelta

from datasketches import compact_theta_sketch, theta_intersection

from profile_store.audiences.answerable import (
    NEAREST_REACH_DAYS,
    NOT_BUILT,
    Cause,
    UnanswerableQuery,
    attribute_causes,
    proposal_sentence,
    propose,
    refusal_message,
)
from profile_store.audiences.built_days import latest_built_day
from profile_store.audiences.query import (
    Leaf,
    Node,
    QueryError,
    QueryLimits,
    days_between,
    is_relative,
    leaves,
    parse_query,
    resolve_dates,
)
from profile_store.audiences.rowkey import (
    AGGREGATE_HASH,
    aggregate_rowkey,
    built_day_rowkey,
    kept_marker_rowkey,
    leaf_scan_range,
    marginal_rowkey,
    pair_marker_rowkey,
    pair_rowkey,
    parse_rowkey,
)
from profile_store.audiences.sketch_algebra import evaluate, union_theta, users_with_min_count
from profile_store.audiences.sketch_table import (
    AGGREGATE_MARK,
    BUILT,
    COUNTS,
    KEPT,
    KEPT_MARKER,
    PAIR_MARKER,
    THETA,
    TRIMMED,
    attribute_column,
)

NUM_STD_DEV = 2  # DataSketches bounds at 2 standard deviations: ~95.4% confidence
UNION_LG_K = 16
_AGGREGATE_SUFFIX = b"|" + AGGREGATE_HASH.encode()


@dataclass
class AudienceEstimate:
    estimate: float
    lower_95: float
    upper_95: float
    exact: bool
    rows_read: int
    elapsed_ms: float
    warnings: list[str] = field(default_factory=list)
    leaf_dates: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The answer as the HTTP API and ``--json`` give it: whole users, the bounds widened to
        whole users so that they still hold; the unrounded estimate kept beside."""
        return {
            "estimate": round(self.estimate),
            "lower_95": math.floor(self.lower_95),
            "upper_95": math.ceil(self.upper_95),
            "estimate_unrounded": self.estimate,
            "exact": self.exact,
            "rows_read": self.rows_read,
            "elapsed_ms": round(self.elapsed_ms, 3),
            "warnings": list(self.warnings),
            "leaf_dates": list(self.leaf_dates),
        }


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _column_equals(family: str, qualifier: str, value: str) -> str:
    return (
        f"SingleColumnValueFilter({_quote(family)},{_quote(qualifier)},=,"
        f"{_quote('binary:' + value)},true,true)"
    )


def leaf_filter(leaf: Leaf) -> bytes:
    """Aggregate rows always; other rows only when every attribute filter matches."""
    aggregate = _column_equals("m", "agg", "1")
    if not leaf.attributes:
        return aggregate.encode()
    matches = " AND ".join(
        _column_equals("a", name, value) for name, value in sorted(leaf.attributes.items())
    )
    return f"{aggregate} OR ({matches})".encode()


@dataclass
class LeafRows:
    """A leaf's sketch blobs by day (the rows that hold its users), the rows read, and why
    some of its days cannot be answered (none: the leaf can be answered)."""

    blobs: dict[date, list[bytes]]
    rows: int
    causes: list[Cause] = field(default_factory=list)

    def all_blobs(self) -> list[bytes]:
        return [blob for day in sorted(self.blobs) for blob in self.blobs[day]]


@dataclass
class Bounds:
    """An estimate with its ~95% bounds (2 standard deviations)."""

    estimate: float
    lower_95: float
    upper_95: float

    @classmethod
    def of(cls, sketch: compact_theta_sketch) -> Bounds:
        return cls(
            sketch.get_estimate(),
            sketch.get_lower_bound(NUM_STD_DEV),
            sketch.get_upper_bound(NUM_STD_DEV),
        )

    def to_dict(self) -> dict:
        return {
            "estimate": round(self.estimate),
            "lower_95": math.floor(self.lower_95),
            "upper_95": math.ceil(self.upper_95),
        }


@dataclass
class DayEstimate:
    day: date
    bounds: Bounds

    def to_dict(self) -> dict:
        return {"day": self.day.isoformat(), **self.bounds.to_dict()}


def leaf_dates(query: Node) -> list[dict]:
    """Each leaf's resolved date range (``last_days`` shown beside), as answers report them."""
    return [
        {
            "path": leaf.path,
            "date_from": leaf.span[0].isoformat(),
            "date_to": leaf.span[1].isoformat(),
            **({"last_days": leaf.last_days} if leaf.last_days is not None else {}),
        }
        for leaf in leaves(query)
    ]


class OverlapQueryError(QueryError):
    """One of the overlap's trees cannot be answered; ``index`` is its position."""

    def __init__(self, index: int, error: QueryError) -> None:
        super().__init__(error.path, error.problem)
        self.index = index
        self.error = error


MAX_CHART_DAYS = 92
"""Longest range ``daily`` charts: a quarter of days, each one estimate."""


class AudienceEngine:
    """Estimates audience sizes; ``open_table`` yields the happybase table of sketches.

    ``union_lg_k`` bounds the entries a union or ``min_count`` result keeps (2^union_lg_k); it
    should be at least the build's lg_k, and larger only costs memory and CPU per query.
    ``read_pair_rows=False`` answers two-attribute leaves by the scan, as before pair rows
    existed (for comparisons).
    """

    def __init__(
        self,
        open_table: Callable[[], AbstractContextManager],
        union_lg_k: int = UNION_LG_K,
        limits: QueryLimits | None = None,
        min_retained_for_estimate: int = 32,
        read_pair_rows: bool = True,
    ) -> None:
        if not 4 <= union_lg_k <= 26:
            raise ValueError(f"union_lg_k: must be between 4 and 26, got {union_lg_k}")
        self.open_table = open_table
        self.union_lg_k = union_lg_k
        self.limits = limits or QueryLimits()
        self.min_retained = min_retained_for_estimate
        self.read_pair_rows = read_pair_rows

    def estimate(self, tree: dict) -> AudienceEstimate:
        started = time.perf_counter()
        query = parse_query(tree, self.limits)
        with self.open_table() as table:
            query = self._resolved(table, query)
            result, sketches, rows = self._evaluate(table, query)
        exact = not result.is_estimation_mode() and not any(
            sketch.is_estimation_mode() for sketch in sketches.values()
        )
        return AudienceEstimate(
            estimate=result.get_estimate(),
            lower_95=result.get_lower_bound(NUM_STD_DEV),
            upper_95=result.get_upper_bound(NUM_STD_DEV),
            exact=exact,
            rows_read=rows,
            elapsed_ms=(time.perf_counter() - started) * 1000,
            warnings=self._warnings(query, result),
            leaf_dates=leaf_dates(query),
        )

    def overlap(self, trees: list[dict]) -> list[list[Bounds]]:
        """The sizes of several audiences and of each pair's intersection: ``[i][i]`` is
        audience i, ``[i][j]`` users in both i and j. Every tree is read once; an error says
        which tree (``OverlapQueryError.index``)."""
        results = []
        with self.open_table() as table:
            for i, tree in enumerate(trees):
                try:
                    query = self._resolved(table, parse_query(tree, self.limits))
                    results.append(self._evaluate(table, query)[0])
                except QueryError as exc:
                    raise OverlapQueryError(i, exc) from None
        matrix = []
        for i, first in enumerate(results):
            row = []
            for j, second in enumerate(results):
                if i == j:
                    row.append(Bounds.of(first))
                    continue
                intersection = theta_intersection()
                intersection.update(first)
                intersection.update(second)
                row.append(Bounds.of(intersection.get_result()))
            matrix.append(row)
        return matrix

    def _evaluate(
        self, table, query: Node
    ) -> tuple[compact_theta_sketch, dict[str, compact_theta_sketch], int]:
        """The tree's result sketch, its leaves' sketches and the rows read."""
        reads = self._read_leaves(table, leaves(query))
        sketches = {
            leaf.path: self._union(leaf, reads[leaf.path].all_blobs()) for leaf in leaves(query)
        }
        result = evaluate(query, sketches, self.union_lg_k)
        return result, sketches, sum(r.rows for r in reads.values())

    def daily(self, tree: dict) -> list[DayEstimate]:
        """The audience's definition applied to each single day of its range: every leaf
        narrowed to that day (a leaf whose range misses the day is empty); one read per leaf."""
        query = parse_query(tree, self.limits)
        with self.open_table() as table:
            query = self._resolved(table, query)
            all_leaves = leaves(query)
            first = min(leaf.span[0] for leaf in all_leaves)
            last = max(leaf.span[1] for leaf in all_leaves)
            span = (last - first).days + 1
            if span > MAX_CHART_DAYS:
                raise QueryError(
                    "$",
                    f"the leaves span {span} days; a daily chart covers at most {MAX_CHART_DAYS}",
                )
            reads = self._read_leaves(table, all_leaves)
        answers = []
        for offset in range(span):
            day = first + timedelta(days=offset)
            sketches = {
                leaf.path: self._union(leaf, reads[leaf.path].blobs.get(day, []))
                for leaf in all_leaves
            }
            answers.append(DayEstimate(day, Bounds.of(evaluate(query, sketches, self.union_lg_k))))
        return answers

    def _resolved(self, table, query: Node) -> Node:
        if not is_relative(query):
            return query
        latest = latest_built_day(table)
        if latest is None:
            relative = next(leaf for leaf in leaves(query) if leaf.last_days is not None)
            raise QueryError(
                f"{relative.path}.last_days",
                "no day is built yet, so there is no latest day to count back from",
            )
        return resolve_dates(query, latest)

    def _warnings(self, query: Node, result: compact_theta_sketch) -> list[str]:
        retained = result.num_retained
        if not result.is_estimation_mode() or retained >= self.min_retained:
            return []
        if isinstance(query, Leaf) or query.operator == "union":
            return []
        relative_error = 1 / max(retained, 1) ** 0.5
        return [
            f"the {query.operator} leaves only {retained} retained samples: the estimate's "
            f"relative standard error is about {relative_error:.0%}; widen the sets or raise lg_k"
        ]

    def _read_leaves(self, table, all_leaves: list[Leaf]) -> dict[str, LeafRows]:
        """Every leaf's rows by path; when some leaf cannot be answered, the refusal of the
        whole query (every leaf read first, so that it names the causes of each)."""
        reads = {leaf.path: self._read_leaf(table, leaf) for leaf in all_leaves}
        if any(read.causes for read in reads.values()):
            raise _refusal(table, all_leaves, reads)
        return reads

    def _read_leaf(self, table, leaf: Leaf) -> LeafRows:
        sketch_column = COUNTS if leaf.min_count else THETA
        if not leaf.attributes:
            return self._read_aggregates(table, leaf, sketch_column)
        if len(leaf.attributes) == 1:
            marginals = self._read_marginals(table, leaf, sketch_column)
            if marginals is not None:
                return marginals
        if len(leaf.attributes) == 2 and self.read_pair_rows:
            pairs = self._read_pairs(table, leaf, sketch_column)
            if pairs is not None:
                return pairs
        return self._scan_combinations(table, leaf, sketch_column)

    def _scan_combinations(self, table, leaf: Leaf, sketch_column: bytes) -> LeafRows:
        """A leaf with attribute filters: its range's matching combination rows, one scan."""
        start, stop = leaf_scan_range(leaf.app_id, leaf.event_type, *leaf.span)
        columns = [sketch_column, AGGREGATE_MARK, KEPT, TRIMMED] + [
            attribute_column(name) for name in leaf.attributes
        ]
        kept_by_day: dict[date, set[str]] = {}
        trimmed_by_day: dict[date, dict[str, dict] | None] = {}
        blobs: dict[date, list[bytes]] = {}
        rows = 0
        for key, cells in table.scan(
            row_start=start,
            row_stop=stop,
            columns=columns,
            filter=leaf_filter(leaf),
            batch_size=1000,
        ):
            rows += 1
            day = parse_rowkey(key)[2]
            if key.endswith(_AGGREGATE_SUFFIX):
                kept_by_day[day] = set(json.loads(cells.get(KEPT, b"[]")))
                trimmed_by_day[day] = json.loads(cells[TRIMMED]) if TRIMMED in cells else None
            elif sketch_column in cells:
                blobs.setdefault(day, []).append(cells[sketch_column])
        return LeafRows(blobs, rows, _causes(table, leaf, kept_by_day, trimmed_by_day))

    def _read_aggregates(self, table, leaf: Leaf, sketch_column: bytes) -> LeafRows:
        """A leaf without attribute filters: its days' aggregate rows, one multi-get.

        The aggregate rows hold every user of (app, event, day), so no other row is needed;
        reading them by key skips the combination rows a range scan would walk past.
        """
        keys = {aggregate_rowkey(leaf.app_id, leaf.event_type, day): day for day in leaf.days()}
        found = table.rows(list(keys), columns=[sketch_column, KEPT])
        kept_by_day = {keys[key]: set(json.loads(cells.get(KEPT, b"[]"))) for key, cells in found}
        blobs = {keys[k]: [cells[sketch_column]] for k, cells in found if sketch_column in cells}
        return LeafRows(blobs, len(found), _causes(table, leaf, kept_by_day, {}))

    def _read_marginals(self, table, leaf: Leaf, sketch_column: bytes) -> LeafRows | None:
        """A one-attribute leaf: its days' marginal rows and kept markers, one multi-get.

        None when a day lacks its marker: the scan path then explains which days cannot answer.
        """
        ((name, value),) = leaf.attributes.items()
        days = leaf.days()
        markers = [kept_marker_rowkey(leaf.app_id, leaf.event_type, day, name) for day in days]
        values = [marginal_rowkey(leaf.app_id, leaf.event_type, day, name, value) for day in days]
        return _marked_rows(table, days, markers, values, sketch_column, KEPT_MARKER)

    def _read_pairs(self, table, leaf: Leaf, sketch_column: bytes) -> LeafRows | None:
        """A two-attribute leaf: its days' pair rows and pair markers, one multi-get.

        None when a day lacks its marker (its attribute pair had too many value pairs for pair
        rows, or the day is not built): the scan path then answers, or explains which days
        cannot.
        """
        first, second = sorted(leaf.attributes)
        days = leaf.days()
        app, event = leaf.app_id, leaf.event_type
        markers = [pair_marker_rowkey(app, event, day, (first, second)) for day in days]
        values = [pair_rowkey(app, event, day, leaf.attributes) for day in days]
        return _marked_rows(table, days, markers, values, sketch_column, PAIR_MARKER)

    def _union(self, leaf: Leaf, blobs: list[bytes]) -> compact_theta_sketch:
        if leaf.min_count:
            return users_with_min_count(blobs, leaf.min_count, self.union_lg_k)
        return union_theta(blobs, self.union_lg_k)


def _causes(
    table,
    leaf: Leaf,
    kept_by_day: dict[date, set[str]],
    trimmed_by_day: dict[date, dict[str, dict] | None],
) -> list[Cause]:
    """Why some days of the leaf cannot be answered: every day must hold the pair or be built
    (one more multi-get, only when a day lacks the pair); on days with the pair, every filtered
    attribute must be kept."""
    causes: list[Cause] = []
    without_pair = [d for d in leaf.days() if d not in kept_by_day]
    if without_pair:
        built = _built_days(table, without_pair)
        missing = tuple(d for d in without_pair if d not in built)
        if missing:
            causes.append(Cause(NOT_BUILT, missing, leaf.path))
    for name in sorted(leaf.attributes):
        causes += attribute_causes(leaf.path, name, kept_by_day, trimmed_by_day)
    return causes


def _refusal(table, all_leaves: list[Leaf], reads: dict[str, LeafRows]) -> UnanswerableQuery:
    """The refusal of a query some of whose leaves cannot be answered: the causes of each, in
    leaf order, and what every leaf can answer instead; ``path`` is the first refused leaf
    (its attribute when an attribute is its first cause)."""
    causes = [cause for leaf in all_leaves for cause in reads[leaf.path].causes]
    ranges = [leaf.span for leaf in all_leaves]
    proposal = propose(
        ranges,
        (day for cause in causes for day in cause.days),
        lambda: _refused_around(table, all_leaves),
    )
    first = causes[0]
    path = first.leaf if first.attribute is None else f"{first.leaf}.attributes.{first.attribute}"
    names = {
        leaf.path: f"{leaf.app_id}/{leaf.event_type}"
        + (f" at {leaf.path}" if leaf.path != "$" else "")
        for leaf in all_leaves
    }
    problem = refusal_message(causes, names, proposal_sentence(proposal, ranges))
    if proposal is None:
        return UnanswerableQuery(path, problem, causes, None)
    answerable = (proposal.first, proposal.last)
    return UnanswerableQuery(path, problem, causes, answerable, proposal.shift_days)


def _refused_around(table, all_leaves: list[Leaf]) -> list[set[date]]:
    """Each leaf's refused days within ``NEAREST_REACH_DAYS`` of its range, for every leaf at
    once: one multi-get of the aggregate rows of its (app, event) on those days, and one of the
    built-day markers of the days where some leaf has none."""
    reach = timedelta(days=NEAREST_REACH_DAYS)
    around = {
        leaf.path: days_between(leaf.span[0] - reach, leaf.span[1] + reach) for leaf in all_leaves
    }
    keys = {
        aggregate_rowkey(leaf.app_id, leaf.event_type, day): (leaf.app_id, leaf.event_type, day)
        for leaf in all_leaves
        for day in around[leaf.path]
    }
    kept = {
        keys[key]: set(json.loads(cells.get(KEPT, b"[]")))
        for key, cells in table.rows(list(keys), columns=[KEPT])
    }
    built = _built_days(table, sorted({key[2] for key in keys.values() if key not in kept}))

    def answerable(leaf: Leaf, day: date) -> bool:
        names = kept.get((leaf.app_id, leaf.event_type, day))
        if names is None:
            return day in built
        return all(name in names for name in leaf.attributes)

    return [{day for day in around[leaf.path] if not answerable(leaf, day)} for leaf in all_leaves]


def _marked_rows(
    table,
    days: list[date],
    markers: list[bytes],
    values: list[bytes],
    sketch_column: bytes,
    marker_column: bytes,
) -> LeafRows | None:
    """The days' value rows and their markers in one multi-get; None when a marker is missing
    (the day cannot answer from these rows)."""
    found = dict(table.rows(markers + values, columns=[sketch_column, marker_column]))
    if not all(key in found for key in markers):
        return None
    blobs = {
        day: [found[key][sketch_column]]
        for day, key in zip(days, values, strict=True)
        if key in found
    }
    return LeafRows(blobs, len(found))


def _built_days(table, days: list[date]) -> set[date]:
    """Those of ``days`` with a built-day marker (one multi-get)."""
    if not days:
        return set()
    keys = {built_day_rowkey(day): day for day in days}
    return {keys[key] for key, _ in table.rows(list(keys), columns=[BUILT])}
