"""What every asset check does with a failure, and with a day that gives it nothing to judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dagster import AssetCheckExecutionContext, AssetCheckResult, AssetCheckSeverity

if TYPE_CHECKING:  # the type of a metadata value that AssetCheckResult wraps itself
    from dagster._core.definitions.metadata import RawMetadataValue

NOTHING_TO_JUDGE = "nothing_to_judge"


def logged(context: AssetCheckExecutionContext, result: AssetCheckResult) -> AssetCheckResult:
    """A failed check's reason (measured values against their limits) in the run's log too,
    where whoever watches the run reads it first; the check's own page has the metadata."""
    if not result.passed:
        name = context.check_specs[0].name
        log = (
            context.log.warning if result.severity == AssetCheckSeverity.WARN else context.log.error
        )
        log(f"check {name} did not pass: {result.description}")
    return result


def nothing_to_judge(reason: str, **metadata: RawMetadataValue) -> AssetCheckResult:
    """A pass that says there was nothing to measure (a day without events is a valid day).

    Passing keeps the day's downstream assets running; saying so keeps a vacuous pass from
    reading like a measured one ("all expectations met" over zero rows).
    """
    return AssetCheckResult(
        passed=True,
        severity=AssetCheckSeverity.ERROR,
        description=f"nothing to judge: {reason}",
        metadata={NOTHING_TO_JUDGE: reason, **metadata},
    )


def problems_found(
    found: list[str], all_well: str, /, **metadata: RawMetadataValue
) -> AssetCheckResult:
    """A check that looks for problems: it passes when there is none, and its description names
    the first three (the metadata holds the rest)."""
    return AssetCheckResult(
        passed=not found,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(found[:3]) or all_well,
        metadata=metadata,
    )
