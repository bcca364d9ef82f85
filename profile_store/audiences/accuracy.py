"""How close sketch answers are to exact ones, and whether that is close enough.

What a theta sketch promises: a leaf or a union in estimation mode keeps about k = 2^lg_k
samples, so its relative standard error is about 1/sqrt(k) (1.6% at lg_k 12, 6.3% at lg_k 8).
An intersection or a difference keeps the users of its result at the rate of its operands'
union: an answer that is a share p of that *operand* rests on about p*k samples, a relative
error of about sqrt((1-p) / (p*k)). The error scales with the operand, not the answer: 45 users
out of 100,000 read at lg_k 12 is within a few dozen users, 65% of the answer, and no
practical k brings such an answer within a relative bar.

Users read an answer's error relative to the answer, so that is what the bars judge, for each
estimation-mode answer of at least ``MIN_JUDGED_USERS`` users and ``MIN_JUDGED_SHARE`` of its
operand: at half its operand or more its error is at most a leaf's (sqrt((1-p) / (p*k)) <=
1/sqrt(k)), so healthy sketches meet the bars on it; below 100 users a single user is over 1% of
the answer, which the 1% bar would ask to be exact. Every estimation-mode answer is also judged
relative to its operand (the largest set its sketches read: the answer itself for a leaf or a
union, all of a ``min_count`` leaf's users) on the same bars, as before, and on its 95% bounds
as the API and the CLI report them, rounded outward to whole users. An exact answer of 0 read
from empty sets counts as 0 error when the estimate is 0 too, and as 100% otherwise (it cannot
be scaled).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIN_JUDGED_USERS = 100
MIN_JUDGED_SHARE = 0.5
HISTOGRAM_EDGES = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.10, 0.20)
"""Error bins (as fractions), the last open: they meet the bars' 1%, 3% and 10%."""


@dataclass(frozen=True)
class AccuracyBars:
    """Pass marks. An answer in exact mode (every sketch below its capacity) must be exact;
    answers in estimation mode are judged on their own, so that a mix of mostly exact answers
    cannot hide poor estimates, each error bar twice: relative to the answer (the answers
    judged so, see the module) and relative to the operand (all of them). A miss over fewer
    than ``min_estimation_answers`` answers is still stated, but as a warning rather than an
    error (too few to be sure)."""

    max_mean_error: float = 0.03
    min_share_under_1pct: float = 0.35
    min_share_under_10pct: float = 0.90
    min_bounds_coverage: float = 0.93
    max_exact_mode_error: float = 0.0
    min_estimation_answers: int = 20


@dataclass(frozen=True)
class ErrorSummary:
    """Errors of some answers relative to one scale (each answer, or each answer's operand)."""

    answers: int
    mean: float
    share_under_1pct: float
    share_under_10pct: float
    p50: float
    p90: float
    p99: float
    max: float

    @classmethod
    def of(cls, errors: np.ndarray) -> ErrorSummary | None:
        if len(errors) == 0:
            return None
        p50, p90, p99 = (float(p) for p in np.percentile(errors, [50, 90, 99]))
        return cls(
            answers=len(errors),
            mean=float(errors.mean()),
            share_under_1pct=float((errors < 0.01).mean()),
            share_under_10pct=float((errors < 0.10).mean()),
            p50=p50,
            p90=p90,
            p99=p99,
            max=float(errors.max()),
        )


@dataclass(frozen=True)
class AnswerErrors:
    """Each answer's error relative to itself and to its operand, whether it is judged relative
    to itself, whether it is in exact mode, and whether its whole-user bounds held."""

    to_answer: np.ndarray
    to_operand: np.ndarray
    judged_to_answer: np.ndarray
    exact_mode: np.ndarray
    bounds_held: np.ndarray

    def select(self, mask: np.ndarray) -> AnswerErrors:
        return AnswerErrors(
            self.to_answer[mask],
            self.to_operand[mask],
            self.judged_to_answer[mask],
            self.exact_mode[mask],
            self.bounds_held[mask],
        )

    @property
    def estimation_mode(self) -> AnswerErrors:
        return self.select(~self.exact_mode)


@dataclass(frozen=True)
class ModeReport:
    """The answers of one mode: the errors of those judged relative to themselves, every
    answer's error relative to its operand, and how often their bounds held."""

    answers: int
    to_answer: ErrorSummary | None
    to_operand: ErrorSummary
    bounds_coverage: float

    @classmethod
    def of(cls, errors: AnswerErrors) -> ModeReport | None:
        to_operand = ErrorSummary.of(errors.to_operand)
        if to_operand is None:
            return None
        return cls(
            answers=to_operand.answers,
            to_answer=ErrorSummary.of(errors.to_answer[errors.judged_to_answer]),
            to_operand=to_operand,
            bounds_coverage=float(errors.bounds_held.mean()),
        )

    @property
    def judged_to_answer(self) -> int:
        return self.to_answer.answers if self.to_answer else 0


@dataclass(frozen=True)
class Figure:
    """One measured figure over some answers beside the limit it must meet (``at_most``:
    value <= limit); a miss over fewer than ``min_answers`` is not sure enough for an error."""

    key: str  # metadata: estimation_mode_{key}_pct, then {max|min}_{key}_pct
    name: str
    relative_to: str  # "answer", "operand", or "" (not an error)
    answers: int
    value: float
    limit: float
    at_most: bool
    template: str  # {value} and {op} are filled in; the limit follows
    min_answers: int = 0

    @property
    def met(self) -> bool:
        return self.value <= self.limit if self.at_most else self.value >= self.limit

    @property
    def sure(self) -> bool:
        return self.answers >= self.min_answers

    @property
    def limit_key(self) -> str:
        return f"{'max' if self.at_most else 'min'}_{self.key}_pct"

    def text(self) -> str:
        op = ("<=" if self.met else ">") if self.at_most else (">=" if self.met else "<")
        digits = 2 if self.at_most else 1  # errors to 0.01%, shares of answers to 0.1%
        value = f"{self.value:.{digits}%}"
        return f"{self.template.format(value=value, op=op)} {self.limit:.0%}"


ERROR_FIGURES = (
    # key, name, ErrorSummary field, AccuracyBars field, at most, template
    ("mean_error", "mean error", "mean", "max_mean_error", True, "mean error {value} {op}"),
    (
        "under_1pct_error",
        "share under 1% error",
        "share_under_1pct",
        "min_share_under_1pct",
        False,
        "{value} under 1% error {op}",
    ),
    (
        "under_10pct_error",
        "share under 10% error",
        "share_under_10pct",
        "min_share_under_10pct",
        False,
        "{value} under 10% error {op}",
    ),
)


def error_figures(
    summary: ErrorSummary, relative_to: str, bars: AccuracyBars, min_answers: int
) -> list[Figure]:
    """The three error figures of ``summary`` against their bars."""
    return [
        Figure(
            f"{relative_to}_{key}",
            f"{name} relative to the {relative_to}",
            relative_to,
            summary.answers,
            getattr(summary, field),
            getattr(bars, bar),
            at_most,
            template,
            min_answers,
        )
        for key, name, field, bar, at_most, template in ERROR_FIGURES
    ]


JUDGED_TO_ANSWER = (
    f"of at least {MIN_JUDGED_USERS} users and {MIN_JUDGED_SHARE:.0%} of their operand"
)


@dataclass(frozen=True)
class AccuracyReport:
    overall: ModeReport
    exact_mode: ModeReport | None
    estimation_mode: ModeReport | None

    @property
    def exact_answers(self) -> float:
        """The share of answers in exact mode."""
        exact = self.exact_mode.answers if self.exact_mode else 0
        return exact / self.overall.answers

    @property
    def estimation_answers(self) -> int:
        return self.estimation_mode.answers if self.estimation_mode else 0

    def exact_mode_figure(self, bars: AccuracyBars) -> Figure | None:
        if self.exact_mode is None or self.exact_mode.to_answer is None:
            return None
        return Figure(
            "exact_mode_error",
            "exact-mode max error",
            "answer",
            self.exact_mode.answers,
            self.exact_mode.to_answer.max,
            bars.max_exact_mode_error,
            True,
            "max error {value} {op}",
        )

    def estimation_figures(self, bars: AccuracyBars) -> list[Figure]:
        """The estimation-mode figures, each with its bar: the errors relative to the answer
        (of the answers judged so), relative to the operand (of all), and the bounds."""
        estimated = self.estimation_mode
        if estimated is None:
            return []
        least = bars.min_estimation_answers
        figures = []
        if estimated.to_answer is not None:
            figures += error_figures(estimated.to_answer, "answer", bars, least)
        figures += error_figures(estimated.to_operand, "operand", bars, least)
        figures.append(
            Figure(
                "bounds_hold",
                "95% bounds coverage",
                "",
                estimated.answers,
                estimated.bounds_coverage,
                bars.min_bounds_coverage,
                False,
                "95% bounds hold the exact answer in {value} {op}",
                least,
            )
        )
        return figures

    def missed(self, bars: AccuracyBars) -> list[tuple[str, Figure]]:
        """Each bar missed, with who missed it."""
        missed = []
        exact = self.exact_mode_figure(bars)
        if exact is not None and not exact.met:
            missed.append((f"exact-mode answers ({exact.answers})", exact))
        for figure in self.estimation_figures(bars):
            if not figure.met:
                scale = f" relative to the {figure.relative_to}" if figure.relative_to else ""
                missed.append((f"estimation-mode answers{scale} ({figure.answers})", figure))
        return missed

    def failures(self, bars: AccuracyBars) -> list[str]:
        """Each bar missed, with the measured value and the bar, however few the answers
        (``sure_failure`` says whether they are enough for an error)."""
        return [f"{who}: {figure.text()}" for who, figure in self.missed(bars)]

    def sure_failure(self, bars: AccuracyBars) -> bool:
        """Whether a bar was missed over enough answers to be sure (an error, not a warning)."""
        return any(figure.sure for _, figure in self.missed(bars))

    def summary(self, bars: AccuracyBars) -> str:
        """One line: the estimation-mode figures relative to the answer, then to the operand,
        each against its bar, the bounds, then the exact mode."""
        parts = []
        estimated = self.estimation_mode
        if estimated is None:
            parts.append("no answer in estimation mode (every sketch read was below its capacity)")
        else:
            figures = self.estimation_figures(bars)

            def few(count: int) -> str:
                least = bars.min_estimation_answers
                return "" if count >= least else f", too few to judge (from {least})"

            def stated(relative_to: str) -> str:
                return ", ".join(f.text() for f in figures if f.relative_to == relative_to)

            judged = estimated.judged_to_answer
            to_answer = (
                f"relative to the answer, the {judged} {JUDGED_TO_ANSWER}{few(judged)}: "
                f"{stated('answer')}"
                if judged
                else f"relative to the answer: none {JUDGED_TO_ANSWER}"
            )
            parts.append(
                f"estimation-mode answers ({estimated.answers}{few(estimated.answers)}): "
                f"{to_answer}; relative to the operand, all {estimated.answers}: "
                f"{stated('operand')}; {figures[-1].text()}"
            )
        exact = self.exact_mode_figure(bars)
        if exact is not None:
            verdict = "exact" if exact.met else exact.text()
            parts.append(f"exact-mode answers ({exact.answers}) {verdict}")
        return "; ".join(parts)


def relative_errors(
    estimates: np.ndarray, exacts: np.ndarray, operands: np.ndarray | None = None
) -> np.ndarray:
    """|estimate - exact| / operand (the exact answer when no operand is given)."""
    estimates = np.asarray(estimates, dtype=float)
    exacts = np.asarray(exacts, dtype=float)
    scale = exacts if operands is None else np.maximum(np.asarray(operands, dtype=float), exacts)
    with np.errstate(divide="ignore", invalid="ignore"):
        errors = np.abs(estimates - exacts) / scale
    zero = scale == 0
    errors[zero] = np.where(np.round(estimates[zero]) == 0, 0.0, 1.0)
    return errors


def bounds_hold(lower_bounds, upper_bounds, exacts) -> np.ndarray:
    """Whether each answer's 95% bounds hold its exact count as users read them: the API and
    the CLI round the lower bound down and the upper one up (``AudienceEstimate.to_dict``)."""
    exacts = np.asarray(exacts, dtype=float)
    return (np.floor(np.asarray(lower_bounds, dtype=float)) <= exacts) & (
        exacts <= np.ceil(np.asarray(upper_bounds, dtype=float))
    )


def judged_to_answer(exacts, operands, exact_flags) -> np.ndarray:
    """Which answers are judged relative to themselves: every exact-mode answer (it must be
    exact), and the estimation-mode ones of at least ``MIN_JUDGED_USERS`` users and
    ``MIN_JUDGED_SHARE`` of their operand (see the module)."""
    exacts = np.asarray(exacts, dtype=float)
    operands = np.maximum(np.asarray(operands, dtype=float), exacts)
    sizeable = (exacts >= MIN_JUDGED_USERS) & (exacts >= MIN_JUDGED_SHARE * operands)
    return np.asarray(exact_flags, dtype=bool) | sizeable


def answer_errors(
    estimates, exacts, lower_bounds, upper_bounds, exact_flags, operands=None
) -> AnswerErrors:
    """``operands``: each answer's largest set read (see the module); the answers themselves
    when not given."""
    exacts = np.asarray(exacts, dtype=float)
    operands = exacts if operands is None else np.asarray(operands, dtype=float)
    return AnswerErrors(
        to_answer=relative_errors(estimates, exacts),
        to_operand=relative_errors(estimates, exacts, operands),
        judged_to_answer=judged_to_answer(exacts, operands, exact_flags),
        exact_mode=np.asarray(exact_flags, dtype=bool),
        bounds_held=bounds_hold(lower_bounds, upper_bounds, exacts),
    )


def accuracy_report(errors: AnswerErrors) -> AccuracyReport:
    overall = ModeReport.of(errors)
    if overall is None:
        raise ValueError("accuracy_report: no answers to judge")
    return AccuracyReport(
        overall=overall,
        exact_mode=ModeReport.of(errors.select(errors.exact_mode)),
        estimation_mode=ModeReport.of(errors.estimation_mode),
    )


@dataclass(frozen=True)
class HistogramBin:
    """Estimation-mode answers whose error falls in [low, high): those judged relative to the
    answer by that error, and all of them by their error relative to the operand."""

    low: float
    high: float  # inf for the last bin
    to_answer: int
    to_operand: int

    @property
    def label(self) -> str:
        if np.isinf(self.high):
            return f">= {self.low:.0%}"
        return f"{self.low * 100:g}-{self.high * 100:g}%"


def error_histogram(errors: AnswerErrors) -> list[HistogramBin]:
    """The estimation-mode answers' errors in ``HISTOGRAM_EDGES`` bins."""
    estimated = errors.estimation_mode
    edges = np.array([*HISTOGRAM_EDGES, np.inf])
    to_answer, _ = np.histogram(estimated.to_answer[estimated.judged_to_answer], edges)
    to_operand, _ = np.histogram(estimated.to_operand, edges)
    return [
        HistogramBin(float(low), float(high), int(a), int(o))
        for low, high, a, o in zip(edges[:-1], edges[1:], to_answer, to_operand, strict=True)
    ]
