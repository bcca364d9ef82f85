"""How close sketch answers are to exact ones, and whether that is close enough.

An answer's error is judged against what its sketches can promise. A theta sketch samples a set
at a rate fixed by its size, so the error of an intersection or a difference is proportional to
its larger operand, not to the (possibly tiny) result: 45 users out of 100,000 read at lg_k 12
is within a few dozen users, 65% of the answer but 0.03% of the set it was sampled from. Each
answer therefore carries its *operand*: the largest set its sketches read (the answer itself for
a leaf or a union; for a leaf with a minimum count, the leaf's users before the count). The
judged error is |estimate - exact| / operand; the error relative to the answer is reported
beside. An exact answer of 0 read from empty sets counts as 0 error when the estimate is 0 too,
and as 100% otherwise (it cannot be scaled).
"""

from __future__ import annotations

import base64
import io
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class AccuracyBars:
    """Pass marks. An answer in exact mode (every sketch below its capacity) must be exact;
    answers in estimation mode are judged on their own, so that a mix of mostly exact answers
    cannot hide poor estimates. Errors are relative to each answer's operand (see the module);
    fewer than ``min_estimation_answers`` estimation-mode answers are still measured against
    the bars, but a miss is a warning rather than an error (too few to be sure)."""

    max_mean_error: float = 0.03
    min_share_under_1pct: float = 0.35
    min_share_under_10pct: float = 0.90
    min_bounds_coverage: float = 0.93
    max_exact_mode_error: float = 0.0
    min_estimation_answers: int = 20


@dataclass(frozen=True)
class ErrorSummary:
    """Errors of a set of answers relative to their operands (judged), how often their 95%
    bounds held, and the errors relative to the answers themselves (reported)."""

    queries: int
    mean_error: float
    share_under_1pct: float
    share_under_10pct: float
    bounds_coverage: float
    p50_error: float
    p90_error: float
    p99_error: float
    max_error: float
    mean_answer_error: float
    max_answer_error: float


def error_summary(
    errors: np.ndarray, covered: np.ndarray, answer_errors: np.ndarray | None = None
) -> ErrorSummary | None:
    if len(errors) == 0:
        return None
    answer_errors = errors if answer_errors is None else answer_errors
    return ErrorSummary(
        queries=len(errors),
        mean_error=float(errors.mean()),
        share_under_1pct=float((errors < 0.01).mean()),
        share_under_10pct=float((errors < 0.10).mean()),
        bounds_coverage=float(covered.mean()),
        p50_error=float(np.percentile(errors, 50)),
        p90_error=float(np.percentile(errors, 90)),
        p99_error=float(np.percentile(errors, 99)),
        max_error=float(errors.max()),
        mean_answer_error=float(answer_errors.mean()),
        max_answer_error=float(answer_errors.max()),
    )


@dataclass(frozen=True)
class Figure:
    """One measured figure beside the limit it must meet (``at_most``: value <= limit)."""

    name: str
    value: float
    limit: float
    at_most: bool
    template: str  # {value} and {op} are filled in; the limit follows

    @property
    def met(self) -> bool:
        return self.value <= self.limit if self.at_most else self.value >= self.limit

    def text(self) -> str:
        op = ("<=" if self.met else ">") if self.at_most else (">=" if self.met else "<")
        digits = 2 if self.at_most else 1  # errors to 0.01%, shares of answers to 0.1%
        value = f"{self.value:.{digits}%}"
        return f"{self.template.format(value=value, op=op)} {self.limit:.0%}"


@dataclass(frozen=True)
class AccuracyReport:
    overall: ErrorSummary
    exact_mode: ErrorSummary | None
    estimation_mode: ErrorSummary | None

    @property
    def exact_answers(self) -> float:
        """The share of answers in exact mode."""
        exact = self.exact_mode.queries if self.exact_mode else 0
        return exact / self.overall.queries

    @property
    def estimation_answers(self) -> int:
        return self.estimation_mode.queries if self.estimation_mode else 0

    def judged(self, bars: AccuracyBars) -> bool:
        """Whether there are enough estimation-mode answers for a miss to be an error."""
        return self.estimation_answers >= bars.min_estimation_answers

    def exact_mode_figure(self, bars: AccuracyBars) -> Figure | None:
        if self.exact_mode is None:
            return None
        return Figure(
            "exact-mode max error",
            self.exact_mode.max_answer_error,
            bars.max_exact_mode_error,
            True,
            "max error {value} {op}",
        )

    def estimation_figures(self, bars: AccuracyBars) -> list[Figure]:
        """The estimation-mode figures, each with its bar (errors relative to the operand)."""
        estimated = self.estimation_mode
        if estimated is None:
            return []
        return [
            Figure(
                "mean error",
                estimated.mean_error,
                bars.max_mean_error,
                True,
                "mean error {value} {op}",
            ),
            Figure(
                "share under 1% error",
                estimated.share_under_1pct,
                bars.min_share_under_1pct,
                False,
                "{value} under 1% error {op}",
            ),
            Figure(
                "share under 10% error",
                estimated.share_under_10pct,
                bars.min_share_under_10pct,
                False,
                "{value} under 10% error {op}",
            ),
            Figure(
                "95% bounds coverage",
                estimated.bounds_coverage,
                bars.min_bounds_coverage,
                False,
                "95% bounds hold the exact answer in {value} {op}",
            ),
        ]

    def failures(self, bars: AccuracyBars) -> list[str]:
        """Each bar missed, with the measured value and the bar; estimation-mode misses are
        listed however few the answers (``judged`` says whether they are enough)."""
        failed = []
        exact = self.exact_mode_figure(bars)
        if exact is not None and not exact.met:
            failed.append(f"exact-mode answers ({self.exact_mode.queries}): {exact.text()}")
        label = f"estimation-mode answers ({self.estimation_answers})"
        failed += [f"{label}: {f.text()}" for f in self.estimation_figures(bars) if not f.met]
        return failed

    def summary(self, bars: AccuracyBars) -> str:
        """One line: the estimation-mode figures against their bars, then the exact mode."""
        parts = []
        estimated = self.estimation_mode
        if estimated is None:
            parts.append("no answer in estimation mode (every sketch read was below its capacity)")
        else:
            figures = ", ".join(f.text() for f in self.estimation_figures(bars))
            few = (
                ""
                if self.judged(bars)
                else f", too few to judge (from {bars.min_estimation_answers})"
            )
            parts.append(
                f"estimation-mode answers ({estimated.queries}{few}): {figures} (errors relative "
                f"to the larger operand; mean {estimated.mean_answer_error:.2%} relative to the "
                "answer)"
            )
        exact = self.exact_mode_figure(bars)
        if exact is not None:
            verdict = "exact" if exact.met else exact.text()
            parts.append(f"exact-mode answers ({self.exact_mode.queries}) {verdict}")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return asdict(self)


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


def accuracy_report(
    estimates, exacts, lower_bounds, upper_bounds, exact_flags, operands=None
) -> AccuracyReport:
    """``operands``: each answer's largest set read (see the module); the answers themselves
    when not given."""
    exacts = np.asarray(exacts, dtype=float)
    errors = relative_errors(estimates, exacts, operands)
    answer_errors = relative_errors(estimates, exacts)
    covered = (np.asarray(lower_bounds) <= exacts + 1e-9) & (
        exacts - 1e-9 <= np.asarray(upper_bounds)
    )
    exact_mode = np.asarray(exact_flags, dtype=bool)
    overall = error_summary(errors, covered, answer_errors)
    if overall is None:
        raise ValueError("accuracy_report: no answers to judge")
    return AccuracyReport(
        overall=overall,
        exact_mode=error_summary(
            errors[exact_mode], covered[exact_mode], answer_errors[exact_mode]
        ),
        estimation_mode=error_summary(
            errors[~exact_mode], covered[~exact_mode], answer_errors[~exact_mode]
        ),
    )


def error_histogram_png(errors: np.ndarray) -> bytes:
    """A histogram of relative errors (percent), with the 1% and 10%
    thresholds drawn and the share of queries below each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    percent = np.clip(np.asarray(errors) * 100, 0, 20)
    figure, axis = plt.subplots(figsize=(6, 3.2), dpi=100)
    axis.hist(
        percent,
        bins=np.arange(0, 20.5, 0.5),
        weights=np.full(len(percent), 100 / max(len(percent), 1)),
    )
    for threshold in (1, 10):  # the two error thresholds the accuracy bars are stated at
        below = 100 * float(np.mean(np.asarray(errors) * 100 < threshold)) if len(percent) else 0
        axis.axvline(threshold, color="tab:red", linestyle="--", linewidth=1)
        axis.annotate(
            f"{threshold}%: {below:.0f}% of queries below",
            (threshold, 1),
            xycoords=("data", "axes fraction"),
            xytext=(3, -12),
            textcoords="offset points",
            fontsize=7,
            color="tab:red",
        )
    axis.set_xlabel("relative error (%)  [clipped at 20%]")
    axis.set_ylabel("% of queries")
    axis.set_title(f"Audience estimate error over {len(percent)} queries")
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    plt.close(figure)
    return buffer.getvalue()


def histogram_markdown(png: bytes) -> str:
    encoded = base64.b64encode(png).decode()
    return f"![relative error histogram](data:image/png;base64,{encoded})"
