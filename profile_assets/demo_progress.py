"""A Dagster logger that prints one line per finished asset and per finished check.

The demo and ``profiles run`` run each day as one in-process run (``run_partition``); without
this the user would watch a silent terminal for the whole day. The line appears when the step
finishes, with its seconds:

      raw_events                        4.1 s
      check raw_events_ids              passed   0.6 s

A check that did not pass says ``FAILED``, or ``WARNED`` when its severity is a warning (the day
goes on); one that had nothing to measure says ``unjudged``; each with a ``why:`` line under it.
Keys an asset quarantined get a ``note:`` line.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import TextIO

from dagster import (
    AssetCheckSeverity,
    DagsterEventType,
    InitLoggerContext,
    LoggerDefinition,
    colored_console_logger,
    logger,
)

from profile_assets.check_results import NOTHING_TO_JUDGE


class StepProgressHandler(logging.Handler):
    """Turns Dagster's step events into one printed line per asset or check step."""

    def __init__(self, out: TextIO, indent: str = "      "):
        super().__init__()
        self._out = out
        self._indent = indent
        self._labels: dict[str, str] = {}
        self._reasons: dict[str, str] = {}
        # Checks evaluated in their asset's own step (``check_specs``): printed under it.
        self._step_checks: dict[str, list[str]] = {}

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        if event is None or not event.step_key:
            return
        kind = event.event_type
        step = event.step_key
        if kind == DagsterEventType.ASSET_MATERIALIZATION:
            asset = event.asset_key.to_user_string()
            # A step may also record other assets' materializations (the erasure's rebuilt
            # sketch days): the step's own asset names its line.
            if step not in self._labels or asset == step:
                self._labels[step] = f"{asset:<34}"
            note = quarantine_note(event.event_specific_data.materialization.metadata)
            if note:
                self._reasons[step] = note
        elif kind == DagsterEventType.ASSET_CHECK_EVALUATION:
            evaluation = event.event_specific_data
            outcome = check_outcome(evaluation.passed, evaluation.severity, evaluation.metadata)
            label = f"check {evaluation.check_name:<28}{outcome:>8} "
            # The measured values against their limits (or why there were none), under the
            # check's line.
            why = (
                f"  why: {evaluation.description}"
                if outcome != "passed" and evaluation.description
                else None
            )
            if step in self._labels:
                self._step_checks.setdefault(step, []).extend(filter(None, [label, why]))
            else:
                self._labels[step] = label
                if why:
                    self._reasons[step] = why.strip()
        elif kind == DagsterEventType.STEP_SUCCESS:
            label = self._labels.pop(step, f"{step:<34}")
            seconds = event.event_specific_data.duration_ms / 1000
            self._write(f"{label}{seconds:6.1f} s")
            if step in self._reasons:
                self._write(f"  {self._reasons.pop(step)}")
            for line in self._step_checks.pop(step, []):
                self._write(line.rstrip())
        elif kind == DagsterEventType.STEP_FAILURE:
            error = event.event_specific_data.error
            cause = error.message.strip().splitlines()[-1] if error else "see the run's logs"
            self._write(f"{event.step_key:<34} FAILED: {cause}")

    def _write(self, line: str) -> None:
        self._out.write(f"{self._indent}{line}\n")
        self._out.flush()


def check_outcome(passed: bool, severity: AssetCheckSeverity, metadata: Mapping) -> str:
    """``passed``, ``FAILED``, ``WARNED`` (a warning-severity check that did not pass: the day
    goes on) or ``unjudged`` (a pass with nothing to measure)."""
    if not passed:
        return "WARNED" if severity == AssetCheckSeverity.WARN else "FAILED"
    return "unjudged" if NOTHING_TO_JUDGE in metadata else "passed"


def quarantine_note(metadata: Mapping) -> str | None:
    """The keys an asset quarantined (shared logins, placeholders), worth a line: from now on
    they link nobody. The largest three are named."""
    count = _value(metadata.get("quarantined_keys"))
    if not count:
        return None
    by_reason = _value(metadata.get("quarantined_by_reason"))
    if not isinstance(by_reason, Mapping):
        by_reason = {}
    reasons = ", ".join(f"{reason}: {n:,}" for reason, n in sorted(by_reason.items()))
    top = _value(metadata.get("top_quarantined"))
    if not isinstance(top, list):
        top = []
    named = ", ".join(
        f"{key['key_type']} {key['key']!r} ({key['profiles']:,} profiles)" for key in top[:3]
    )
    return (
        f"note: {count:,} key{'s' if count != 1 else ''} quarantined"
        + (f" ({reasons})" if reasons else "")
        + (f", e.g. {named}" if named else "")
    )


def _value(entry: object) -> object:
    """A metadata entry's value (Dagster wraps them), or the plain value."""
    return getattr(entry, "value", entry)


def step_progress_logger(out: TextIO = sys.stdout) -> LoggerDefinition:
    """A logger definition printing to ``out``; add it to a job with ``with_logger_defs``."""

    @logger(config_schema=None, description="One line per finished asset and check, with seconds.")
    def progress(_init_context: InitLoggerContext) -> logging.Logger:
        printer = logging.Logger("demo_progress", level=logging.DEBUG)
        printer.addHandler(StepProgressHandler(out))
        return printer

    return progress


def run_partition(
    job,
    day: str | None,
    instance,
    tags: dict[str, str] | None = None,
    console_level: str = "WARNING",
) -> dict:
    """One day of ``job`` (None: an unpartitioned job) in this process, printing a line per
    finished asset and check, and the run's log messages of ``console_level`` and above (a
    caller that reports the steps' outcomes itself can leave their warnings to its report)."""
    job = job.with_logger_defs(
        {"console": colored_console_logger, "progress": step_progress_logger()}
    )
    loggers = {"console": {"config": {"log_level": console_level}}, "progress": {}}
    result = job.execute_in_process(
        run_config={"loggers": loggers},
        partition_key=day,
        instance=instance,
        raise_on_error=False,
        tags=tags,
    )
    materialized = {}
    for event in result.get_asset_materialization_events():
        materialization = event.step_materialization_data.materialization
        metadata = {k: v.value for k, v in materialization.metadata.items()}
        materialized[materialization.asset_key.to_user_string()] = metadata
    evaluations = result.get_asset_check_evaluations()
    # A warning-severity check that did not pass says something to look at, not a failed day:
    # it is reported apart, so a range of days goes on.
    warned = {
        e.check_name: e.description or ""
        for e in evaluations
        if not e.passed and e.severity == AssetCheckSeverity.WARN
    }
    checks = {e.check_name: e.passed for e in evaluations if e.check_name not in warned}
    unjudged = {
        e.check_name: e.description or ""
        for e in evaluations
        if e.passed and NOTHING_TO_JUDGE in e.metadata
    }
    return {
        "success": result.success,
        "failed_steps": [event.step_key for event in result.get_step_failure_events()],
        "run_id": result.run_id,
        "assets": materialized,
        "checks": checks,
        "warnings": warned,
        "unjudged": unjudged,
    }
