"""Great Expectations suites for a clean event partition, validated in Spark.

Each suite answers one question a downstream consumer relies on (the schema, the ids, the time
window, the event names), so each becomes one asset check with its own pass/fail in the UI.

Great Expectations is imported when a suite is built, not with this module: its import costs
seconds of CPU, and every process that loads the code location (the webserver's and the
daemon's code servers, each run worker, ``dagster dev``) imports this module, most of them
without ever validating a partition.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import date

from pyspark.sql import DataFrame

from profile_store.events.schema import EVENT_COLUMNS, ID_TYPES
from profile_store.events.validation import day_bounds


@dataclass
class SuiteOutcome:
    """The verdict of one suite, with each expectation's figures for the check's metadata."""

    success: bool
    expectations: list[dict] = field(default_factory=list)

    @property
    def failed(self) -> list[str]:
        return [e["expectation"] for e in self.expectations if not e["success"]]

    def summary(self) -> str:
        """Each failed expectation with its measured figures, or that all were met."""
        failures = [_describe(e) for e in self.expectations if not e["success"]]
        return "; ".join(failures) or f"all {len(self.expectations)} expectations met"


def _describe(outcome: dict) -> str:
    name = outcome["expectation"]
    if outcome.get("column"):
        name += f"({outcome['column']})"
    if outcome.get("unexpected_count") is not None:
        total = outcome.get("element_count")
        of = f" of {total:,}" if total is not None else ""
        examples = outcome.get("partial_unexpected_list") or []
        shown = f", e.g. {examples[:3]}" if examples else ""
        return f"{name}: {outcome['unexpected_count']:,}{of} rows unexpected{shown}"
    if outcome.get("observed_value") is not None:
        return f"{name}: observed {outcome['observed_value']}"
    return f"{name}: not met"


@functools.lru_cache(maxsize=1)
def _spark_batch_definition():
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    # No persist: GE would cache the whole partition (every column) before the first metric,
    # which costs more than the column-pruned Parquet reads its metrics make, and holds the
    # day in executor memory for the rest of the run.
    source = context.data_sources.add_spark("lake", persist=False)
    asset = source.add_dataframe_asset("raw_events")
    return asset.add_batch_definition_whole_dataframe("partition")


# Counts without examples: each example list is a Spark job of its own per expectation (the
# three suites of a day took 40 jobs with them, 20 without). Examples are fetched for the failed
# expectations only, by validating those again.
_COUNTS_ONLY = {"result_format": "BASIC", "partial_unexpected_count": 0}


def run_suite(df: DataFrame, name: str, expectations: list) -> SuiteOutcome:
    """Validate ``df`` against ``expectations`` in Spark and summarise the result; a failed
    expectation's outcome also lists examples of its unexpected values."""
    result = _validate(df, name, expectations, _COUNTS_ONLY)
    failed = [item.expectation_config for item in result.results if not item.success]
    with_examples = {}
    if failed:
        # GE orders a suite's results as it computes them: matched by configuration.
        again = _validate(df, name, [config.to_domain_obj() for config in failed], None)
        with_examples = {_identity(item.expectation_config): item for item in again.results}
    outcomes = [
        _outcome(with_examples.get(_identity(item.expectation_config), item))
        for item in result.results
    ]
    return SuiteOutcome(success=bool(result.success), expectations=outcomes)


def _identity(config) -> str:
    return f"{config.type}{sorted(config.kwargs.items())!r}"


def _validate(df: DataFrame, name: str, expectations: list, result_format: dict | None):
    import great_expectations as gx

    batch_definition = _spark_batch_definition()  # first: a suite needs a current GE context
    suite = gx.ExpectationSuite(name=name)
    for expectation in expectations:
        suite.add_expectation(expectation)
    batch = batch_definition.get_batch(batch_parameters={"dataframe": df})
    if result_format is None:
        return batch.validate(suite)
    return batch.validate(suite, result_format=result_format)


def _outcome(item) -> dict:
    config = item.expectation_config
    details = {k: v for k, v in item.result.items() if k in _REPORTED_FIGURES}
    if not details.get("partial_unexpected_list"):
        details.pop("partial_unexpected_list", None)
    return {
        "expectation": config.type,
        "column": config.kwargs.get("column"),
        "success": bool(item.success),
        **details,
    }


_REPORTED_FIGURES = (
    "element_count",
    "unexpected_count",
    "unexpected_percent",
    "observed_value",
    "partial_unexpected_list",
)


def schema_expectations() -> list:
    import great_expectations as gx

    return [gx.expectations.ExpectTableColumnsToMatchOrderedList(column_list=list(EVENT_COLUMNS))]


def id_expectations() -> list:
    import great_expectations as gx

    return [
        *[
            gx.expectations.ExpectColumnValuesToNotBeNull(column=column)
            for column in ("event_id", "app_id", "user_id", "id_type")
        ],
        gx.expectations.ExpectColumnValuesToBeUnique(column="event_id"),
        gx.expectations.ExpectColumnValuesToBeInSet(column="id_type", value_set=list(ID_TYPES)),
    ]


def event_time_expectations(day: date) -> list:
    import great_expectations as gx

    start, end = day_bounds(day)
    return [
        gx.expectations.ExpectColumnValuesToNotBeNull(column="event_time"),
        gx.expectations.ExpectColumnValuesToBeBetween(
            column="event_time",
            min_value=start.replace(tzinfo=None),
            max_value=end.replace(tzinfo=None),
            strict_max=True,
        ),
    ]


def event_type_expectations() -> list:
    import great_expectations as gx

    return [
        gx.expectations.ExpectColumnValuesToNotBeNull(column="event_type"),
        gx.expectations.ExpectColumnValueLengthsToBeBetween(column="event_type", min_value=1),
    ]
