"""Running a fixed-seed query mix through the engine and through Spark, and comparing."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
from pyspark.sql import DataFrame, SparkSession

from profile_store.audiences.accuracy import AccuracyReport, accuracy_report, relative_errors
from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.exact import exact_leaf_users, exact_users
from profile_store.audiences.query import leaves, parse_query
from profile_store.audiences.query_sampler import build_catalog, sample_queries


@dataclass
class AccuracyRun:
    report: AccuracyReport
    errors: np.ndarray
    latencies_ms: np.ndarray
    worst: list[dict]


def run_accuracy(
    spark: SparkSession,
    events: DataFrame,
    decisions: DataFrame,
    engine: AudienceEngine,
    days: list[date],
    count: int,
    seed: int,
) -> AccuracyRun | None:
    """Sample ``count`` queries over ``days``, answer each twice, and report the errors; None
    when the days hold no events (nothing to ask about: every answer would be a trivial 0).

    ``events`` and ``decisions`` must cover exactly ``days`` (``decisions`` with a ``date``).
    """
    catalog = build_catalog(events, decisions)
    if not catalog:
        return None
    trees = sample_queries(catalog, days, count, seed)
    parsed = [parse_query(tree) for tree in trees]
    leaf_users = exact_leaf_users(spark, events, [x for q in parsed for x in leaves(q)])
    exacts = np.array([len(exact_users(q, leaf_users)) for q in parsed], dtype=float)
    answers = [engine.estimate(tree) for tree in trees]
    estimates = np.array([a.estimate for a in answers])
    errors = relative_errors(estimates, exacts)
    report = accuracy_report(
        estimates,
        exacts,
        [a.lower_95 for a in answers],
        [a.upper_95 for a in answers],
        [a.exact for a in answers],
    )
    order = np.argsort(-errors)[:5]
    worst = [
        {
            "query": trees[i],
            "estimate": round(float(estimates[i]), 1),
            "exact": int(exacts[i]),
            "error": round(float(errors[i]), 4),
        }
        for i in order
    ]
    latencies = np.array([a.elapsed_ms for a in answers])
    return AccuracyRun(report=report, errors=errors, latencies_ms=latencies, worst=worst)
