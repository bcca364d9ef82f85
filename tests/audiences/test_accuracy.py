"""How the accuracy check judges answers: which errors, against what, and what it says."""

from __future__ import annotations

import numpy as np
import pytest

from profile_store.audiences.accuracy import (
    AccuracyBars,
    AccuracyReport,
    accuracy_report,
    answer_errors,
    bounds_hold,
    error_histogram,
    relative_errors,
)
from profile_store.audiences.engine import AudienceEstimate

BARS = AccuracyBars()


def report_of(
    answers: list[tuple[float, float, float, bool]], spread: float | None = 0.05
) -> AccuracyReport:
    """(estimate, exact, operand, exact mode) answers with bounds of +-``spread`` around the
    estimate (None: bounds that hold any answer)."""
    estimates, exacts, operands, modes = (list(c) for c in zip(*answers, strict=True))
    wide = spread is None
    lower = [0.0 if wide else e * (1 - spread) for e in estimates]
    upper = [1e9 if wide else e * (1 + spread) for e in estimates]
    return accuracy_report(answer_errors(estimates, exacts, lower, upper, modes, operands))


def leaves(count: int, estimate=10_050.0, exact=10_000) -> list:
    """Estimation-mode leaves (their own operand), 0.5% off."""
    return [(estimate, exact, exact, False)] * count


def test_relative_error_handles_empty_exact_answers():
    errors = relative_errors(np.array([0.0, 3.0, 110.0]), np.array([0.0, 0.0, 100.0]))
    assert errors.tolist() == [0.0, 1.0, pytest.approx(0.1)]


def test_an_exact_mode_answer_that_is_not_exact_fails_the_bars():
    report = report_of([(100, 100, 100, True), (101, 100, 100, True)])
    assert report.failures(BARS) == ["exact-mode answers (2): max error 1.00% > 0%"]
    assert report.sure_failure(BARS)


def test_estimation_mode_answers_are_judged_apart_from_exact_ones():
    # 180 exact answers dilute the mean of all to 0.9%: only the estimation-mode set shows 9%.
    report = report_of([(1000, 1000, 1000, True)] * 180 + leaves(20, 10_900))
    assert "estimation-mode answers relative to the answer (20): mean error 9.00% > 3%" in (
        report.failures(BARS)
    )


def test_sizeable_answers_are_judged_relative_to_themselves():
    # Half of their operand, 5% off: 2.5% of the operand, which alone would pass.
    halves = [(1050.0, 1000, 2000, False)] * 20
    report = report_of(halves + leaves(15))
    assert report.estimation_mode.judged_to_answer == 35
    assert report.failures(BARS) == [
        "estimation-mode answers relative to the answer (35): mean error 3.07% > 3%"
    ]
    assert report.sure_failure(BARS)


def test_answers_of_a_small_share_of_their_operand_are_judged_relative_to_it_alone():
    # 450 of 100,000 users, 33% off: within 0.15% of the set the sketch sampled them from.
    tiny = [(300.0, 450, 100_000, False)] * 2
    report = report_of(tiny + leaves(23), spread=None)
    assert report.estimation_mode.judged_to_answer == 23
    assert report.estimation_mode.to_operand.answers == 25
    assert report.failures(BARS) == []


def test_answers_under_the_minimum_users_are_judged_relative_to_the_operand_alone():
    small = [(90.0, 80, 100, False)] * 2  # 80% of their operand, but under 100 users
    report = report_of(small + leaves(23), spread=None)
    assert report.estimation_mode.judged_to_answer == 23


def test_every_missed_bar_is_named_with_its_measured_value_and_scale():
    report = report_of([(10000, 13000, 13000, False)] * 25)
    assert report.failures(BARS) == [
        "estimation-mode answers relative to the answer (25): mean error 23.08% > 3%",
        "estimation-mode answers relative to the answer (25): 0.0% under 1% error < 35%",
        "estimation-mode answers relative to the answer (25): 0.0% under 10% error < 90%",
        "estimation-mode answers relative to the operand (25): mean error 23.08% > 3%",
        "estimation-mode answers relative to the operand (25): 0.0% under 1% error < 35%",
        "estimation-mode answers relative to the operand (25): 0.0% under 10% error < 90%",
        "estimation-mode answers (25): 95% bounds hold the exact answer in 0.0% < 93%",
    ]


def test_a_miss_over_too_few_answers_is_named_but_not_sure():
    # 30 estimation-mode answers, of which the 5 judged relative to themselves are 9% off.
    tiny = [(300.0, 450, 100_000, False)] * 25
    report = report_of(tiny + leaves(5, 10_900), spread=None)
    assert report.failures(BARS) == [
        "estimation-mode answers relative to the answer (5): mean error 9.00% > 3%",
        "estimation-mode answers relative to the answer (5): 0.0% under 1% error < 35%",
    ]
    assert not report.sure_failure(BARS)


def test_bounds_are_compared_rounded_outward_to_whole_users():
    held = bounds_hold([0.0, 540.4, 0.0, 541.0], [539.6, 600.0, 538.9, 600.0], [540] * 4)
    assert held.tolist() == [True, True, False, False]


@pytest.mark.parametrize(
    ("lower", "upper"), [(512.3, 539.6), (540.4, 580.0), (500.0, 538.9), (540.9, 560.2)]
)
def test_bounds_hold_where_the_api_reports_them_holding(lower, upper):
    reported = AudienceEstimate(530.0, lower, upper, False, 1, 0.1).to_dict()
    api_holds = reported["lower_95"] <= 540 <= reported["upper_95"]
    assert bounds_hold([lower], [upper], [540]).tolist() == [api_holds]


def test_an_upper_bound_just_under_the_exact_count_holds_in_the_report():
    errors = answer_errors([530.2], [540], [520.9], [539.6], [False], [540])
    assert accuracy_report(errors).estimation_mode.bounds_coverage == 1.0


def test_the_summary_states_both_scales_against_their_limits():
    tiny = [(15.9, 45, 100_000, False)] * 2
    report = report_of(tiny + leaves(23), spread=None)
    assert report.summary(BARS) == (
        "estimation-mode answers (25): relative to the answer, the 23 of at least 100 users "
        "and 50% of their operand: mean error 0.50% <= 3%, 100.0% under 1% error >= 35%, "
        "100.0% under 10% error >= 90%; relative to the operand, all 25: mean error 0.46% "
        "<= 3%, 100.0% under 1% error >= 35%, 100.0% under 10% error >= 90%; 95% bounds hold "
        "the exact answer in 100.0% >= 93%"
    )


def test_a_pass_states_no_error_relative_to_the_answer_beyond_its_limit():
    # The two tiny intersections are 65% off their answers: a pass must not read as 5.63%.
    tiny = [(15.9, 45, 100_000, False)] * 2
    report = report_of(tiny + leaves(23), spread=None)
    assert report.failures(BARS) == []
    assert "5.63%" not in report.summary(BARS)


def test_a_large_error_relative_to_the_answer_is_stated_as_a_miss():
    halves = [(1300.0, 1000, 2000, False)] * 20  # 30% off, 15% of their operand
    report = report_of(halves + leaves(20), spread=None)
    assert (
        "relative to the answer, the 40 of at least 100 users and 50% of their operand: "
        "mean error 15.25% > 3%" in report.summary(BARS)
    )


def test_the_summary_says_when_no_estimate_is_judged_relative_to_itself():
    report = report_of([(15.9, 45, 100_000, False)] * 3, spread=None)
    assert "relative to the answer: none of at least 100 users and 50% of their operand; " in (
        report.summary(BARS)
    )


def test_the_summary_says_too_few_beside_each_count_under_the_minimum():
    tiny = [(300.0, 450, 100_000, False)] * 25
    summary = report_of(tiny + leaves(5), spread=None).summary(BARS)
    assert summary.startswith(
        "estimation-mode answers (30): relative to the answer, the 5 of at least 100 users and "
        "50% of their operand, too few to judge (from 20): mean error 0.50% <= 3%"
    )


def test_the_summary_says_when_no_answer_estimates():
    report = report_of([(100.0, 100, 100, True)])
    assert report.summary(BARS) == (
        "no answer in estimation mode (every sketch read was below its capacity); "
        "exact-mode answers (1) exact"
    )


def test_the_histogram_bins_judged_answers_by_their_own_error_and_all_by_the_operands():
    tiny = [(300.0, 450, 100_000, False)]  # 33% of the answer, 0.15% of the operand
    rows = [(e, x, 0, 1e9, m, o) for e, x, o, m in tiny + leaves(2)]
    errors = answer_errors(*zip(*rows, strict=True))
    bins = {b.label: (b.to_answer, b.to_operand) for b in error_histogram(errors)}
    assert bins["0-0.5%"] == (0, 1)
    assert bins["0.5-1%"] == (2, 2)
    assert bins[">= 20%"] == (0, 0)
    assert sum(a for a, _ in bins.values()) == 2 and sum(o for _, o in bins.values()) == 3
