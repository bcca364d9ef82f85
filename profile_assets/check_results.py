"""What every asset check does with a failure: say why in the run's log as well."""

from dagster import AssetCheckExecutionContext, AssetCheckResult


def logged(context: AssetCheckExecutionContext, result: AssetCheckResult) -> AssetCheckResult:
    """A failed check's reason (measured values against their limits) in the run's log too,
    where whoever watches the run reads it first; the check's own page has the metadata."""
    if not result.passed:
        name = context.check_specs[0].name
        context.log.error(f"check {name} did not pass: {result.description}")
    return result
