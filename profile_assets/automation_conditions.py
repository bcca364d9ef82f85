"""Declarative automation: a day's downstream assets recompute when an input of that day changes.

When ``raw_events[D]`` is materialized on its own (from the UI, or a backfill of raw_events
alone), every daily asset downstream of it recomputes for day D without a click. The condition of
each asset is derived from how it depends on its inputs:

- an input of the same day (``raw_events`` -> ``attribute_stats``) triggers the recompute and
  must exist (or be requested in the same tick);
- an input read over a trailing window (``trimmed_attributes`` over 7 days of
  ``attribute_stats``) triggers every day whose window holds the updated day; missing days of
  the window never block it. Updated by a whole day's run (below), it triggers a tick later:
  that run recomputed its own day, and the next tick sees it did;
- the asset's own previous day (the identity graph and the profiles fold each day into the day
  before) neither triggers nor blocks: it only orders backfills. A re-run of an old day does not
  cascade through every later day (the landing sensor also re-runs only the late day); run a
  backfill over the later days when they should see it;
- nothing is computed for a day whose ``raw_events`` partition does not exist (a trailing window
  never reaches into days that have not landed);
- an input the asset lists under ``ORDER_ONLY_DEPS`` in its metadata only orders the job's steps
  (``audience_activations`` reads the day's sketches to compare its exact count with them):
  its updates neither trigger nor block, so a trim-window refresh of later days' sketches does
  not cascade into their activations and profiles.

As in ``AutomationCondition.eager()``: a partition is requested once per change of its inputs
(since it was last requested, materialized or in a run: a run that will compute it covers the
changes before it), a run that materialized an input and then the
asset leaves nothing to do, and nothing starts while an input or the partition itself is in a
run or backfill. A whole day's run (tagged ``WHOLE_DAY_RUN_TAGS``: every run of
``daily_pipeline``, whose job tag it is, from the landing sensor, the schedule, the launchpad,
a job backfill, ``profiles run`` or the demo) never triggers the same day's assets: it
recomputed them. Without the tag, a tick that reads the run's events while one of its steps is
being recorded can see an input updated and the asset neither updated nor in progress, and
request a second run of that day (seen after a landing-sensor run). A run of the asset graph
that selected the asset itself (*Materialize all*) needs no tag: an input it updated is
``executed_with_root_target`` and does not trigger. Unlike
``eager()``, any day may trigger, not only the latest one, and missing partitions are left to
the landing sensor: turning automation on over a lake requests nothing until something changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from dagster import (
    AssetDep,
    AssetKey,
    AssetsDefinition,
    AssetSelection,
    AssetSpec,
    AutomationCondition,
    TimeWindowPartitionMapping,
    map_asset_specs,
)

ORDER_ONLY_DEPS = "automation/order_only_deps"
WHOLE_DAY_RUN_TAGS = {"profiles/whole_day": "true"}


def _order_only(spec: AssetSpec) -> list[AssetKey]:
    value = spec.metadata.get(ORDER_ONLY_DEPS)
    names = getattr(value, "value", value) or []
    return [AssetKey(name) for name in names]


def _is_trailing_window(dep: AssetDep) -> bool:
    mapping = dep.partition_mapping
    return isinstance(mapping, TimeWindowPartitionMapping) and mapping.start_offset < 0


def _input_updated_not_by_a_whole_day_run(inputs: AssetSelection) -> AutomationCondition:
    """``any_deps_updated()`` over ``inputs``, except by a whole day's run.

    That run recomputed this asset's day too. Its updates of a trailing window's input, which
    days after it read as well, trigger through ``_trailing_input_updated_by_a_whole_day_run``.
    """
    by_another_run = (
        AutomationCondition.newly_updated()
        & ~AutomationCondition.executed_with_root_target()
        & ~AutomationCondition.executed_with_tags(tag_values=WHOLE_DAY_RUN_TAGS)
    ).with_label("updated_not_by_a_whole_day_run")
    return (
        AutomationCondition.any_deps_match(by_another_run | AutomationCondition.will_be_requested())
        .allow(inputs)
        .with_label("any_input_updated")
    )


def _trailing_input_updated_by_a_whole_day_run(inputs: AssetSelection) -> AutomationCondition:
    """A trailing-window input updated by a whole day's run, still unhandled a tick later.

    The run of day D recomputes this asset's day D itself, and a tick can read the input's update
    while the run's later step is being recorded: the run seen ended, this asset's day D neither
    updated nor in progress. Waiting one tick lets that update arrive and reset day D, while days
    D+1 to D+6, whose windows hold D, stay pending and are requested.
    """
    by_a_whole_day_run = (
        AutomationCondition.newly_updated()
        & ~AutomationCondition.executed_with_root_target()
        & AutomationCondition.executed_with_tags(tag_values=WHOLE_DAY_RUN_TAGS)
    ).with_label("updated_by_a_whole_day_run")
    pending = (
        AutomationCondition.any_deps_match(by_a_whole_day_run)
        .allow(inputs)
        .since(_handled())
        .with_label("trailing_input_updated_by_a_whole_day_run")
    )
    return (pending & ~pending.newly_true()).with_label(
        "trailing_input_updated_by_a_whole_day_run_a_tick_ago"
    )


def _handled() -> AutomationCondition:
    """``since_last_handled()``'s reset, and a run (queued or running) that will compute the
    partition: it reads the inputs when its step runs.

    Without it, an input updated while the partition waited in a run (a trailing window's
    earlier day, run just before) stayed pending, and a tick that saw the partition materialized
    (no longer in progress) before it saw the materialization as new requested it again.
    """
    return (
        AutomationCondition.newly_requested()
        | AutomationCondition.newly_updated()
        | AutomationCondition.initial_evaluation()
        | AutomationCondition.in_progress()
    ).with_label("handled_or_in_a_run")


def recompute_with_inputs(spec: AssetSpec, day_root: AssetKey) -> AutomationCondition | None:
    """The condition of one daily asset, from its dependencies (None for ``day_root`` itself).

    ``day_root`` is the asset whose partition says that a day has landed.
    """
    if spec.key == day_root or not spec.deps:
        return None
    trailing = [
        dep.asset_key for dep in spec.deps if _is_trailing_window(dep) and dep.asset_key != spec.key
    ]
    order_only = _order_only(spec)
    same_day = [
        dep.asset_key
        for dep in spec.deps
        if dep.asset_key != spec.key
        and dep.asset_key not in trailing
        and dep.asset_key not in order_only
    ]

    # The asset's own previous day is in neither list: it neither triggers nor blocks.
    if not trailing and not same_day:
        return None
    every_input = AssetSelection.assets(*same_day, *trailing)
    updated: AutomationCondition = _input_updated_not_by_a_whole_day_run(every_input).since(
        _handled()
    )
    if trailing:
        updated = updated | _trailing_input_updated_by_a_whole_day_run(
            AssetSelection.assets(*trailing)
        )
    day_landed = AutomationCondition.asset_matches(
        day_root, ~AutomationCondition.missing()
    ).with_label(f"{day_root.to_user_string()}_of_the_day_present")
    condition = updated & day_landed
    if same_day:
        inputs = AssetSelection.assets(*same_day)
        condition = condition & ~AutomationCondition.any_deps_missing().allow(inputs)
    condition = (
        condition & ~AutomationCondition.any_deps_in_progress() & ~AutomationCondition.in_progress()
    )
    return condition.with_label("recompute_with_inputs")


def with_daily_automation(
    assets: Iterable[AssetsDefinition], day_root: AssetKey
) -> Sequence[AssetsDefinition]:
    """The same assets, each one downstream of ``day_root`` carrying its condition."""

    def with_condition(spec: AssetSpec) -> AssetSpec:
        condition = recompute_with_inputs(spec, day_root)
        if condition is None:
            return spec
        return spec.replace_attributes(automation_condition=condition)

    return map_asset_specs(with_condition, list(assets))
