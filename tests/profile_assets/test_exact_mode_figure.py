"""The estimation check's ``exact_mode_max_error_pct``: an exact mode none of whose answers was
judged relative to itself has no such error (it once raised AttributeError on ``None.max``)."""

from __future__ import annotations

import numpy as np

from profile_assets.audience_checks import exact_mode_max_error_pct
from profile_store.audiences.accuracy import ErrorSummary, ModeReport


def _summary(errors: list[float]) -> ErrorSummary:
    summary = ErrorSummary.of(np.array(errors))
    assert summary is not None
    return summary


def test_no_exact_mode_answers_is_no_error():
    assert exact_mode_max_error_pct(None) == 0.0


def test_exact_answers_none_judged_relative_to_the_answer_is_no_error():
    exact = ModeReport(
        answers=3, to_answer=None, to_operand=_summary([0.0, 0.01, 0.02]), bounds_coverage=1.0
    )
    assert exact_mode_max_error_pct(exact) == 0.0


def test_the_largest_error_relative_to_the_answer_in_percent():
    exact = ModeReport(
        answers=2,
        to_answer=_summary([0.001, 0.012345]),
        to_operand=_summary([0.0, 0.01]),
        bounds_coverage=1.0,
    )
    assert exact_mode_max_error_pct(exact) == 1.234
