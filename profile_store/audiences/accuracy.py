"""How close sketch answers are to exact ones: the figures seed 001 reported, and ours.

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
    """Pass marks (seed 001 production: mean 6%, 40% under 1%, 87% under 10%)."""

    max_mean_error: float = 0.02
    min_share_under_1pct: float = 0.60
    min_share_under_10pct: float = 0.97
    min_bounds_coverage: float = 0.93


@dataclass(frozen=True)
class AccuracyReport:
    queries: int
    mean_error: float
    share_under_1pct: float
    share_under_10pct: float
    bounds_coverage: float
    exact_answers: float
    p50_error: float
    p90_error: float
    p99_error: float
    max_error: float

    def failures(self, bars: AccuracyBars) -> list[str]:
        failed = []
        if self.mean_error > bars.max_mean_error:
            failed.append(f"mean error {self.mean_error:.2%} > {bars.max_mean_error:.0%}")
        if self.share_under_1pct < bars.min_share_under_1pct:
            failed.append(f"{self.share_under_1pct:.1%} under 1% < {bars.min_share_under_1pct:.0%}")
        if self.share_under_10pct < bars.min_share_under_10pct:
            failed.append(
                f"{self.share_under_10pct:.1%} under 10% < {bars.min_share_under_10pct:.0%}"
            )
        if self.bounds_coverage < bars.min_bounds_coverage:
            failed.append(
                f"95% bounds hold the exact answer in {self.bounds_coverage:.1%} "
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
    return AccuracyReport(
        queries=len(errors),
        mean_error=float(errors.mean()),
        share_under_1pct=float((errors < 0.01).mean()),
        share_under_10pct=float((errors < 0.10).mean()),
        bounds_coverage=float(covered.mean()),
        exact_answers=float(np.mean(exact_flags)),
        p50_error=float(np.percentile(errors, 50)),
        p90_error=float(np.percentile(errors, 90)),
        p99_error=float(np.percentile(errors, 99)),
        max_error=float(errors.max()),
    )


def error_histogram_png(errors: np.ndarray) -> bytes:
    """A histogram of relative errors (percent), as seed 001 plotted it, with the 1% and 10%
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
