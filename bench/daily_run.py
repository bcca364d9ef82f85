"""Daily run vs full recompute: what one new day costs against rebuilding every day from scratch.

Fixed seed. Generates ``days + 1`` landing days and ingests the first ``days`` into ``raw_events``
(setup), then times, through the code location's assets and ``materialize`` as the runs of a
backfill and of the landing sensor execute them (embedded gateway started per run):

1. full recompute: a fresh HBase store and every lake area except the raw events (landing,
   events, quarantine, segment feed and the answer key are kept) deleted, then every asset but
   ``raw_events`` materialized for each of the ``days`` days in order, one run per day;
2. new day: the whole asset graph for day ``days + 1`` in one run (ingest included), folding
   into the state the full recompute left: identity components and profile compaction run
   incrementally.

Prints a markdown table, the new day's seconds per asset, and the ratio against the bar
(new day <= 0.3x the full recompute). Asset checks are left out unless ``--checks`` (then both
sides run them). The lake is kept under ``--work-dir`` and reused when it is complete::

    .venv/bin/python bench/daily_run.py [--days 30] [--events-per-day 20000] [--seed 7] [--checks]

``--whole-graph`` measures instead what one day of a production run costs: the ``days`` history
days run through every asset and check (setup), then the new day runs through every asset AND every
asset check in one run. Per step and for the run it prints wall seconds, CPU-seconds of the whole
process tree and per million landing events, the Spark jobs and stages submitted and the JVM calls
made to plan them (``bench/run_cost.py`` says how each is measured); for the run, end-to-end
events/s (bar: >= 10,000 events/s on the 2-core machine) and the peak RSS of the driver JVM and of
this process during the new day. As a yardstick that does not depend on the machine's load, DuckDB
then counts the exact distinct users per app and event type over the same landing files, and the
run's CPU-seconds are given as a multiple of DuckDB's. ``--list-jobs`` lists every Spark job of the
new day with its step and call site. On a shared machine wall seconds follow its load (printed),
CPU-seconds less so but they grow too when the cores are oversubscribed; job counts do not depend
on it::

    .venv/bin/python bench/daily_run.py --whole-graph --days 1 --events-per-day 1000000

Spark's variables (``SPARK_MASTER``, ``SPARK_CONF_JSON``, ...) are taken from the environment, to
try a setting; the lake and the store are always the bench's own.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hbase_gateway import machine  # noqa: E402  (bench/hbase_gateway.py)
from run_cost import (  # noqa: E402  (bench/run_cost.py)
    JvmCalls,
    RunCost,
    SparkJob,
    busy_seconds,
    driver_jvm_pid,
    peak_rss_mib,
    reset_peak_rss,
    spark_jobs,
    spark_session,
    step_costs,
    tree_cpu_seconds,
)

from profile_store.generator import generate_lake  # noqa: E402
from profile_store.lake.layout import (  # noqa: E402
    EVENTS,
    GROUND_TRUTH,
    LANDING,
    QUARANTINE,
    SEGMENT_FEED,
    SUCCESS_MARKER,
    landing_day,
)

# Early enough that every day is a partition already; set before the code location is imported.
START = date(2026, 9, 1)
KEPT_AREAS = {LANDING, EVENTS, QUARANTINE, SEGMENT_FEED, GROUND_TRUTH}
# The call site Spark gives the jobs that adaptive execution submits from its thread pool.
ANONYMOUS_CALL_SITE = "withThreadLocalCaptured"
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def prepare_lake(root: Path, days: int, events_per_day: int, seed: int) -> None:
    """The landing days, generated once per work directory."""
    last = START + timedelta(days=days - 1)
    if (root / landing_day(last) / SUCCESS_MARKER).exists():
        return
    print(f"generating {days} x {events_per_day:,} events (seed {seed}) ...", flush=True)
    shutil.rmtree(root, ignore_errors=True)
    generate_lake(root, days, events_per_day, seed, START)


def clear_derived(root: Path, hbase_dir: Path) -> None:
    """Back to raw events only: a fresh HBase store and no derived lake area."""
    shutil.rmtree(hbase_dir, ignore_errors=True)
    for area in root.iterdir():
        if area.is_dir() and area.name not in KEPT_AREAS:
            shutil.rmtree(area)


class Runner:
    """Materializes the code location's assets for one day at a time, and times each run: wall
    seconds, and CPU-seconds of the process tree at the start and end of every step."""

    def __init__(self, lake: Path, hbase_dir: Path, checks: bool) -> None:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PROFILES_START_DATE", START.isoformat())
        from dagster import DagsterInstance

        from profile_assets.definitions import daily_assets, defs
        from resources import resources_from_env

        self.defs = defs
        self.daily_assets = daily_assets
        self.definitions = [*daily_assets, *(defs.asset_checks if checks else [])]
        self.instance = DagsterInstance.ephemeral()
        # Spark's settings from the environment (SPARK_MASTER, SPARK_CONF_JSON ...), so that a
        # setting can be tried here; the lake and the store are always the bench's own.
        spark_settings = {k: v for k, v in os.environ.items() if k.startswith("SPARK_")}
        self.resources = resources_from_env(
            {
                **spark_settings,
                "PROFILES_LAKE_ROOT": str(lake),
                "PROFILES_HBASE_DATA_DIR": str(hbase_dir),
                "PROFILES_START_DATE": START.isoformat(),
            }
        )
        self.jvm_calls = JvmCalls()
        self.step_marks: list[tuple[str, str, float, float, int]] = []
        self.last_job = -1
        handle = self.instance.handle_new_event

        def marking_steps(event, **kwargs):  # the run's events reach the instance here
            if event.dagster_event is not None and event.dagster_event.event_type_value in (
                "STEP_START",
                "STEP_SUCCESS",
                "STEP_FAILURE",
            ):
                mark = (event.step_key, event.dagster_event.event_type_value)
                self.step_marks.append((*mark, time.time(), tree_cpu_seconds(), self.jvm_calls()))
            return handle(event, **kwargs)

        self.instance.handle_new_event = marking_steps

    def asset_names(self) -> list[str]:
        return [key.to_user_string() for asset in self.daily_assets for key in asset.keys]

    def run(self, day: date, assets: list[str]) -> tuple[float, dict[str, float]]:
        """Wall seconds of one run, and seconds per step (asset or check)."""
        run = self.run_with_costs(day, assets)
        return run.seconds, {name: step.seconds for name, step in run.steps.items()}

    def run_with_costs(self, day: date, assets: list[str]) -> RunCost:
        """One run with what each step and the whole run cost, and each check's outcome."""
        from dagster import materialize

        self.step_marks = []
        cpu_before, calls_before = tree_cpu_seconds(), self.jvm_calls()
        started = time.perf_counter()
        result = materialize(
            self.definitions,
            selection=assets,
            partition_key=day.isoformat(),
            resources=self.resources,
            instance=self.instance,
            run_config=QUIET,
        )
        seconds = time.perf_counter() - started
        cpu, calls = tree_cpu_seconds() - cpu_before, self.jvm_calls() - calls_before
        jobs = spark_jobs(spark_session(), self.last_job)
        self.last_job = max([self.last_job, *(job.job_id for job in jobs)])
        received = None
        for event in result.get_asset_materialization_events():
            materialization = event.step_materialization_data.materialization
            if materialization.asset_key.to_user_string() == "raw_events":
                received = materialization.metadata["received_rows"].value
        outcomes = {
            f"{evaluation.asset_key.to_user_string()}_{evaluation.check_name}": "passed"
            if evaluation.passed
            else f"FAILED ({evaluation.severity.value})"
            for evaluation in result.get_asset_check_evaluations()
        }
        steps = step_costs(self.step_marks, jobs)
        return RunCost(seconds, cpu, calls, steps, jobs, received, outcomes)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30, help="days of the full recompute")
    parser.add_argument("--events-per-day", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--checks", action="store_true", help="also run every asset check")
    parser.add_argument(
        "--whole-graph",
        action="store_true",
        help="time one new day through every asset and check instead of the full recompute",
    )
    parser.add_argument(
        "--list-jobs",
        action="store_true",
        help="with --whole-graph: also list the new day's Spark jobs per step with call sites",
    )
    parser.add_argument("--work-dir", type=Path, default=Path("data/bench-daily-run"))
    args = parser.parse_args()
    if args.days < 1 or args.events_per_day < 1:
        parser.error("--days and --events-per-day must be at least 1")

    work = args.work_dir / f"{args.days}x{args.events_per_day}-seed{args.seed}"
    lake, hbase_dir = work / "lake", work / "hbase"
    prepare_lake(lake, args.days + 1, args.events_per_day, args.seed)
    days = [START + timedelta(days=i) for i in range(args.days)]
    new_day = START + timedelta(days=args.days)

    if args.whole_graph:
        return whole_graph_day(lake, hbase_dir, days, new_day, args)

    runner = Runner(lake, hbase_dir, args.checks)
    everything = runner.asset_names()
    derived = [name for name in everything if name != "raw_events"]
    clear_derived(lake, hbase_dir)
    print(f"setup: raw_events for {args.days} days ...", flush=True)
    setup = sum(runner.run(day, ["raw_events"])[0] for day in days)

    full = 0.0
    for day in days:
        seconds, _ = runner.run(day, derived)
        full += seconds
        print(f"  full recompute {day}: {seconds:.1f} s", flush=True)
    new_seconds, steps = runner.run(new_day, everything)
    print(f"  new day {new_day}: {new_seconds:.1f} s", flush=True)

    ratio = new_seconds / full
    print()
    print(f"Machine: {machine()}")
    print(
        f"Lake: {args.days + 1} days x {args.events_per_day:,} generated events (seed "
        f"{args.seed}); asset checks {'included' if args.checks else 'left out'}; "
        f"setup ingest of {args.days} days {setup:.1f} s"
    )
    print()
    print("| run | days | seconds | seconds/day |")
    print("| --- | ---: | ---: | ---: |")
    print(
        f"| full recompute (fresh HBase, derived areas deleted) | {args.days} | {full:.1f} | "
        f"{full / args.days:.1f} |"
    )
    print(f"| new day, whole graph, incremental | 1 | {new_seconds:.1f} | {new_seconds:.1f} |")
    print()
    print("| new day: asset | seconds |")
    print("| --- | ---: |")
    for name in everything:
        if name in steps:
            print(f"| {name} | {steps[name]:.1f} |")
    print()
    verdict = "met" if ratio <= 0.3 else "NOT met"
    print(f"New day / full recompute = {ratio:.3f}x (bar <= 0.3x: {verdict})")
    return 0


def whole_graph_day(
    lake: Path, hbase_dir: Path, days: list[date], new_day: date, args: argparse.Namespace
) -> int:
    """The history days through the whole graph (setup), then the new day, costed per step."""
    runner = Runner(lake, hbase_dir, checks=True)
    everything = runner.asset_names()
    clear_derived(lake, hbase_dir)
    shutil.rmtree(lake / EVENTS, ignore_errors=True)
    shutil.rmtree(lake / QUARANTINE, ignore_errors=True)
    for day in days:
        run = runner.run_with_costs(day, everything)
        print(
            f"setup: history day {day}, every asset and check: {run.seconds:.1f} s, "
            f"{run.cpu_seconds:.1f} CPU-s, {len(run.jobs)} Spark jobs, "
            f"{run.jvm_calls:,} JVM calls",
            flush=True,
        )
        steps = ", ".join(f"{name} {step.seconds:.1f}" for name, step in run.steps.items())
        print(f"  {steps}", flush=True)
        failed = {name: outcome for name, outcome in run.outcomes.items() if outcome != "passed"}
        passed = len(run.outcomes) - len(failed)
        print(f"  checks: {passed} of {len(run.outcomes)} passed {failed or ''}")
    jvm = driver_jvm_pid(spark_session())
    for pid in (jvm, os.getpid()):
        reset_peak_rss(pid)
    load_before = os.getloadavg()
    run = runner.run_with_costs(new_day, everything)
    load_after = os.getloadavg()
    assert run.received_rows is not None, "raw_events did not run"
    jvm_peak, python_peak = peak_rss_mib(jvm), peak_rss_mib(os.getpid())
    yardstick = duckdb_distinct_users(lake, new_day)

    print()
    print(f"Machine: {machine()}")
    print(
        f"Lake: {len(days)} history day(s) + 1 new day x {args.events_per_day:,} generated events "
        f"(seed {args.seed}); the new day in one run with every asset and every asset check"
    )
    print(
        f"Load average (1 min) at the new day's start and end: {load_before[0]:.1f}, "
        f"{load_after[0]:.1f} ({os.cpu_count()} cores): wall seconds follow that load, "
        "CPU-seconds less so, job counts not at all"
    )
    print()
    print_cost_tables(run, everything)
    if args.list_jobs:
        print()
        print_jobs(run)
    rate = run.received_rows / run.seconds
    cpu_per_million = run.cpu_seconds / (run.received_rows / 1e6)
    print()
    print(
        "| landing events | run seconds | events/s end-to-end | CPU-seconds | "
        "CPU-s per M events | Spark jobs | stages | driver JVM peak RSS | Python peak RSS |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    print(
        f"| {run.received_rows:,} | {run.seconds:.1f} | {rate:,.0f} | {run.cpu_seconds:.1f} | "
        f"{cpu_per_million:.1f} | {len(run.jobs)} | {run.stages} | {jvm_peak:,.0f} MiB | "
        f"{python_peak:,.0f} MiB |"
    )
    print()
    print(
        "| yardstick: DuckDB exact COUNT(DISTINCT user_id) per app and event type over the "
        "landing files | groups | seconds | CPU-seconds | our CPU-s / DuckDB's |"
    )
    print("| --- | ---: | ---: | ---: | ---: |")
    print(
        f"| {yardstick.rows:,} rows read | {yardstick.groups} | {yardstick.seconds:.1f} | "
        f"{yardstick.cpu_seconds:.1f} | {run.cpu_seconds / yardstick.cpu_seconds:.0f}x |"
    )
    print()
    verdict = "met" if rate >= 10_000 else "NOT met"
    print(f"End-to-end {rate:,.0f} events/s (bar >= 10,000 events/s: {verdict})")
    return 0


def print_cost_tables(run: RunCost, assets: list[str]) -> None:
    """Per step: wall and CPU seconds, CPU per million landing events, Spark jobs and stages."""
    millions = run.received_rows / 1e6
    print(
        "| new day: step | kind | seconds | of which in Spark jobs | CPU-seconds | "
        "CPU-s per M events | Spark jobs | stages | JVM calls | outcome |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for name, step in run.steps.items():
        kind = "asset" if name in assets else "check"
        outcome = run.outcomes.get(name, "") if kind == "check" else "materialized"
        print(
            f"| {name} | {kind} | {step.seconds:.1f} | {busy_seconds(step.jobs):.1f} | "
            f"{step.cpu_seconds:.1f} | "
            f"{step.cpu_seconds / millions:.1f} | {len(step.jobs)} | {step.stages} | "
            f"{step.jvm_calls:,} | {outcome} |"
        )
    in_steps = sum(step.cpu_seconds for step in run.steps.values())
    outside = run.jobs_outside_steps()
    print(
        f"| (between steps: run start and end, resources) | | "
        f"{run.seconds - sum(step.seconds for step in run.steps.values()):.1f} | "
        f"{busy_seconds(outside):.1f} | {run.cpu_seconds - in_steps:.1f} | "
        f"{(run.cpu_seconds - in_steps) / millions:.1f} | "
        f"{len(outside)} | {sum(job.stages for job in outside)} | "
        f"{run.jvm_calls - sum(step.jvm_calls for step in run.steps.values()):,} | |"
    )
    print(
        f"| **whole run** | | {run.seconds:.1f} | {busy_seconds(run.jobs):.1f} | "
        f"{run.cpu_seconds:.1f} | "
        f"{run.cpu_seconds / millions:.1f} | {len(run.jobs)} | {run.stages} | "
        f"{run.jvm_calls:,} | |"
    )


def print_jobs(run: RunCost) -> None:
    """The run's Spark jobs by step and by the action that submitted them."""
    print("| step | action (call site) | Spark jobs | stages | seconds in its jobs | job ids |")
    print("| --- | --- | ---: | ---: | ---: | --- |")
    steps = [*run.steps.items(), ("(between steps)", None)]
    for name, step in steps:
        jobs = run.jobs_outside_steps() if step is None else step.jobs
        for call_site, action_jobs in jobs_by_action(jobs):
            ids = f"{action_jobs[0].job_id}-{action_jobs[-1].job_id}"
            stages = sum(job.stages for job in action_jobs)
            busy = busy_seconds(action_jobs)
            print(f"| {name} | {call_site} | {len(action_jobs)} | {stages} | {busy:.2f} | {ids} |")


def jobs_by_action(jobs: list[SparkJob]) -> list[tuple[str, list[SparkJob]]]:
    """Jobs grouped under the action that needed them. Adaptive execution submits each shuffle
    stage and broadcast of a query as a job of its own from a thread pool, where Spark knows no
    Python call site: those are counted with the next job that has one (the query's action);
    consecutive actions of one call site are one row."""
    groups: list[tuple[str, list[SparkJob]]] = []
    pending: list[SparkJob] = []
    for job in jobs:
        pending.append(job)
        if ANONYMOUS_CALL_SITE in job.call_site:
            continue
        if groups and groups[-1][0] == job.call_site and len(pending) == 1:
            groups[-1][1].append(job)
        else:
            groups.append((job.call_site, pending))
        pending = []
    if pending:
        groups.append(("(adaptive-execution jobs of no named action)", pending))
    return groups


@dataclass(frozen=True)
class Yardstick:
    rows: int
    groups: int
    seconds: float
    cpu_seconds: float


def duckdb_distinct_users(lake: Path, day: date) -> Yardstick:
    """DuckDB's exact distinct users per (app, event type) over the day's landing files: a
    figure of what reading the day costs on this machine, whatever its load (its threads run in
    this process, so its CPU is this process's)."""
    import duckdb

    files = str(lake / landing_day(day) / "*.jsonl.gz")
    query = f"""
        SELECT app_id, event_type, COUNT(DISTINCT user_id) AS users, SUM(COUNT(*)) OVER () AS rows
        FROM read_json('{files}', format = 'newline_delimited', ignore_errors = true,
            columns = {{app_id: 'VARCHAR', event_type: 'VARCHAR', user_id: 'VARCHAR'}})
        GROUP BY app_id, event_type
    """
    connection = duckdb.connect()
    cpu_before, started = time.process_time(), time.perf_counter()
    result = connection.execute(query).fetchall()
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_before
    connection.close()
    return Yardstick(int(result[0][3]) if result else 0, len(result), seconds, cpu)


if __name__ == "__main__":
    raise SystemExit(main())
