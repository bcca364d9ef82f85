"""Running a fixed-seed query mix through the engine and through Spark, and comparing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
from pyspark.sql import DataFrame

from profile_store.audiences.accuracy import (
    AccuracyReport,
    AnswerErrors,
    accuracy_report,
    answer_errors,
)
from profile_store.audiences.engine import AudienceEngine, AudienceEstimate
from profile_store.audiences.exact import (
    ExactSide,
    counted_leaves,
    exact_users,
    operand_size,
)
from profile_store.audiences.query import leaves, parse_query
from profile_store.audiences.query_sampler import (
    AskedTrees,
    CatalogEntry,
    sample_estimating_queries,
    sample_queries,
)

SEEK_ATTEMPTS = 10  # estimating trees tried per estimation-mode answer still wanted


@dataclass
class AccuracyRun:
    report: AccuracyReport
    errors: AnswerErrors
    latencies_ms: np.ndarray
    worst: list[dict]  # the five answers furthest off by the error they are judged on
    sought: int = 0  # trees added to the mix because they estimate


def run_accuracy(
    exact: ExactSide,
    decisions: DataFrame,
    engine: AudienceEngine,
    days: list[date],
    count: int,
    seed: int,
    min_estimation_answers: int = 0,
) -> AccuracyRun | None:
    """Sample ``count`` queries over ``days``, answer each twice, and report the errors; None
    when the days hold no events (nothing to ask about: every answer would be a trivial 0).

    When fewer than ``min_estimation_answers`` of the mix are answered in estimation mode and
    some pair's sketches estimate, trees built around such pairs are added until there are
    that many (or the attempts run out): estimation is judged whenever the days estimate.

    ``exact`` and ``decisions`` must cover exactly ``days`` (``decisions`` with a ``date``).
    """
    catalog = exact.catalog(decisions)
    if not catalog:
        return None
    asked = AskedTrees()  # the mix and the sought trees ask no question twice
    trees = sample_queries(catalog, days, count, seed, asked)
    answers = [engine.estimate(tree) for tree in trees]
    wanted = min_estimation_answers - sum(not answer.exact for answer in answers)
    sought = _seek_estimates(engine, catalog, days, wanted, seed, asked) if wanted > 0 else []
    trees += [tree for tree, _ in sought]
    answers += [answer for _, answer in sought]

    parsed = [parse_query(tree) for tree in trees]
    all_leaves = [x for q in parsed for x in leaves(q)]
    leaf_users = exact.leaf_users(all_leaves + counted_leaves(all_leaves))
    exacts = np.array([len(exact_users(q, leaf_users)) for q in parsed], dtype=float)
    operands = np.array([operand_size(q, leaf_users) for q in parsed], dtype=float)
    estimates = np.array([a.estimate for a in answers])
    errors = answer_errors(
        estimates,
        exacts,
        [a.lower_95 for a in answers],
        [a.upper_95 for a in answers],
        [a.exact for a in answers],
        operands,
    )
    held_to = np.where(errors.judged_to_answer, errors.to_answer, errors.to_operand)
    worst = [
        {
            "query": trees[i],
            "estimate": round(float(estimates[i]), 1),
            "exact": int(exacts[i]),
            "operand": int(operands[i]),
            "error_to_answer": round(float(errors.to_answer[i]), 4),
            "error_to_operand": round(float(errors.to_operand[i]), 4),
            "judged_to_answer": bool(errors.judged_to_answer[i]),
        }
        for i in np.argsort(-held_to, kind="stable")[:5]
    ]
    latencies = np.array([a.elapsed_ms for a in answers])
    return AccuracyRun(
        report=accuracy_report(errors),
        errors=errors,
        latencies_ms=latencies,
        worst=worst,
        sought=len(sought),
    )


def _seek_estimates(
    engine: AudienceEngine,
    catalog: list[CatalogEntry],
    days: list[date],
    wanted: int,
    seed: int,
    asked: AskedTrees,
) -> list[tuple[dict, AudienceEstimate]]:
    """Up to ``wanted`` trees not ``asked`` yet answered in estimation mode, around the pairs
    whose sketches estimate over ``days`` (the engine says which: one read per pair). Engine
    answers are cheap; only the trees kept cost an exact answer."""
    span = {"date_from": days[0].isoformat(), "date_to": days[-1].isoformat()}
    estimating = {
        (entry.app_id, entry.event_type)
        for entry in catalog
        if not engine.estimate(
            {"app_id": entry.app_id, "event_type": entry.event_type, **span}
        ).exact
    }
    if not estimating:
        return []
    found = []
    tried = sample_estimating_queries(
        catalog, estimating, days, wanted * SEEK_ATTEMPTS, seed, asked
    )
    for tree in tried:
        answer = engine.estimate(tree)
        if not answer.exact:
            found.append((tree, answer))
            if len(found) == wanted:
                break
    return found
