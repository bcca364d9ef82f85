"""How close sketch answers are to exact ones, and whether that is close enough.

Relative error is |estimate - exact| / exact; a query whose exact answer is 0 counts as 0 error
when the estimate is 0 too, and as 100% otherwise (it cannot be scaled).
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
    cannot hide poor estimates."""

    max_mean_error: float = 0.03
    min_share_under_1pct: float = 0.35
    min_share_under_10pct: float = 0.90
    min_bounds_coverage: float = 0.93
    max_exact_mode_error: float = 0.0
    min_estimation_answers: int = 20  # fewer are reported, not judged


@dataclass(frozen=True)
class ErrorSummary:
    """Relative errors of a set of answers, and how often their 95% bounds held."""

    queries: int
    mean_error: float
    share_under_1pct: float
    share_under_10pct: float
    bounds_coverage: float
    p50_error: float
    p90_error: float
    p99_error: float
    max_error: float


def error_summary(errors: np.ndarray, covered: np.ndarray) -> ErrorSummary | None:
    if len(errors) == 0:
        return None
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
    )


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

    def failures(self, bars: AccuracyBars) -> list[str]:
        """Each bar missed, with the measured value and the bar."""
        failed = []
        exact = self.exact_mode
        if exact and exact.max_error > bars.max_exact_mode_error:
            failed.append(
                f"exact-mode answers ({exact.queries}): max error {exact.max_error:.2%} > "
                f"{bars.max_exact_mode_error:.0%}"
            )
        estimated = self.estimation_mode
        if estimated is None or estimated.queries < bars.min_estimation_answers:
            return failed
        label = f"estimation-mode answers ({estimated.queries})"
        if estimated.mean_error > bars.max_mean_error:
            failed.append(
                f"{label}: mean error {estimated.mean_error:.2%} > {bars.max_mean_error:.0%}"
            )
        if estimated.share_under_1pct < bars.min_share_under_1pct:
            failed.append(
                f"{label}: {estimated.share_under_1pct:.1%} under 1% error "
                f"< {bars.min_share_under_1pct:.0%}"
            )
        if estimated.share_under_10pct < bars.min_share_under_10pct:
            failed.append(
                f"{label}: {estimated.share_under_10pct:.1%} under 10% error "
                f"< {bars.min_share_under_10pct:.0%}"
            )
        if estimated.bounds_coverage < bars.min_bounds_coverage:
            failed.append(
                f"{label}: 95% bounds hold the exact answer in {estimated.bounds_coverage:.1%} "
                f"< {bars.min_bounds_coverage:.0%}"
            )
        return failed

    def to_dict(self) -> dict:
        return asdict(self)


def relative_errors(estimates: np.ndarray, exacts: np.ndarray) -> np.ndarray:
    estimates = np.asarray(estimates, dtype=float)
    exacts = np.asarray(exacts, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        errors = np.abs(estimates - exacts) / exacts
    zero = exacts == 0
    errors[zero] = np.where(np.round(estimates[zero]) == 0, 0.0, 1.0)
    return errors


def accuracy_report(estimates, exacts, lower_bounds, upper_bounds, exact_flags) -> AccuracyReport:
    exacts = np.asarray(exacts, dtype=float)
    errors = relative_errors(estimates, exacts)
    covered = (np.asarray(lower_bounds) <= exacts + 1e-9) & (
        exacts - 1e-9 <= np.asarray(upper_bounds)
    )
    exact_mode = np.asarray(exact_flags, dtype=bool)
    overall = error_summary(errors, covered)
    if overall is None:
        raise ValueError("accuracy_report: no answers to judge")
    return AccuracyReport(
        overall=overall,
        exact_mode=error_summary(errors[exact_mode], covered[exact_mode]),
        estimation_mode=error_summary(errors[~exact_mode], covered[~exact_mode]),
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
