"""What a run costs beyond its wall time: CPU-seconds of the whole process tree, the Spark jobs
and stages it submitted, and the driver's peak memory.

CPU: the run's work is spread over this process (Dagster, the Python side of Spark), its child
the driver JVM (the executors run inside it in local mode), the JVM's Python workers (forked by
``pyspark.daemon``) and the embedded gateway processes started per run. ``tree_cpu_seconds``
walks ``/proc`` for this process and every live descendant and sums, per process,
``utime + stime`` (its own threads) and ``cutime + cstime`` (the children it has reaped). A
descendant that exits is reaped by its parent, which is in the tree, so its time moves into the
parent's ``cutime`` instead of vanishing: the sum only grows, and the difference of two readings
is what the tree spent between them. (Only a process that outlives its parent and is adopted by
init would escape; none of the run's processes do that.) The gateway is stopped and reaped at
the end of each run, so its time is counted in full.

JVM calls: every DataFrame and Column operation of the Python side is one or more py4j round
trips to the driver JVM, each a few hundred microseconds, before any job runs; ``JvmCalls``
counts them, so that a step's plan-building work is counted as exactly as its jobs.

Jobs: the driver's status store (what the Spark UI shows, kept with the UI disabled too) lists
every job with its submission time, call site and stages; jobs are given to the step whose
start and end bracket their submission.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from py4j.clientserver import ClientServerConnection
from pyspark.sql import SparkSession

TICKS = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parent.parent


def _stat_fields(pid: str) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # exited since the directory was listed
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    return text[text.rindex(")") + 2 :].split()


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU-seconds spent so far by ``root`` (this process by default) and all its descendants,
    including descendants that have exited and been reaped."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    times: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = _stat_fields(entry)
        if fields is None:
            continue
        # After the name: state ppid ... utime(14) stime(15) cutime(16) cstime(17), 1-based.
        pid, ppid = int(entry), int(fields[1])
        children.setdefault(ppid, []).append(pid)
        times[pid] = sum(int(value) for value in fields[11:15])
    total, pending = 0, [root]
    while pending:
        pid = pending.pop()
        total += times.get(pid, 0)
        pending.extend(children.get(pid, []))
    return total / TICKS


def _status_kb(pid: int, field: str) -> int:
    match = re.search(rf"^{field}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.M)
    if match is None:
        raise ValueError(f"/proc/{pid}/status has no {field}")
    return int(match.group(1))


def reset_peak_rss(pid: int) -> None:
    """Start a new peak: writing 5 to clear_refs resets the process's VmHWM (Linux 4.0+)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def peak_rss_mib(pid: int) -> float:
    return _status_kb(pid, "VmHWM") / 1024


def driver_jvm_pid(session: SparkSession) -> int:
    return int(session.sparkContext._jvm.java.lang.ProcessHandle.current().pid())


@dataclass(frozen=True)
class SparkJob:
    job_id: int
    submitted: float
    """Epoch seconds."""
    call_site: str
    stages: int
    """Stages that ran (skipped ones, whose shuffle output was reused, left out)."""
    completed: float = 0.0
    """Epoch seconds; the submission time for a job still running."""


def busy_seconds(jobs: list[SparkJob]) -> float:
    """Seconds during which at least one of ``jobs`` ran (the union of their intervals):
    a step's wall seconds minus these are spent outside Spark jobs (planning, Python, I/O of
    the driver, Dagster)."""
    total, reached = 0.0, float("-inf")
    for job in sorted(jobs, key=lambda job: job.submitted):
        start = max(job.submitted, reached)
        if job.completed > start:
            total += job.completed - start
        reached = max(reached, job.completed)
    return total


def _relative(call_site: str) -> str:
    """A call site without this machine's paths: relative to the repository or to the
    installed packages."""
    return re.sub(r"\S*/site-packages/", "", call_site.replace(f"{REPO}/", ""))


def spark_jobs(session: SparkSession, after_job: int = -1) -> list[SparkJob]:
    """The driver's jobs with an id above ``after_job``, oldest first."""
    jvm = session.sparkContext._jvm
    store = session.sparkContext._jsc.sc().statusStore()
    listed = jvm.scala.jdk.javaapi.CollectionConverters.asJava(store.jobsList(None))
    jobs = []
    for job in listed:
        job_id = int(job.jobId())
        if job_id <= after_job:
            continue
        submitted = job.submissionTime()
        completed = job.completionTime()
        description = job.description()
        call_site = str(description.get() if description.isDefined() else job.name())
        jobs.append(
            SparkJob(
                job_id=job_id,
                submitted=submitted.get().getTime() / 1000 if submitted.isDefined() else 0.0,
                call_site=_relative(call_site),
                stages=int(job.numCompletedStages()) + int(job.numFailedStages()),
                completed=completed.get().getTime() / 1000 if completed.isDefined() else 0.0,
            )
        )
    return sorted(jobs, key=lambda job: job.job_id)


def spark_session() -> SparkSession:
    """The session the run's steps used (the Spark resource keeps it for the process)."""
    session = SparkSession.getActiveSession()
    if session is None:
        raise RuntimeError("no active Spark session: did the run use Spark?")
    return session


class JvmCalls:
    """Counts this process's py4j calls to the JVM from its creation on (one counter a process:
    PySpark talks to its JVM over ``ClientServerConnection``, one per Python thread)."""

    _count = 0
    _installed = False

    def __init__(self) -> None:
        if not JvmCalls._installed:
            send = ClientServerConnection.send_command

            def counted(connection, command, *args, **kwargs):
                JvmCalls._count += 1
                return send(connection, command, *args, **kwargs)

            ClientServerConnection.send_command = counted
            JvmCalls._installed = True

    def __call__(self) -> int:
        """Calls so far."""
        return JvmCalls._count


@dataclass(frozen=True)
class StepCost:
    seconds: float
    cpu_seconds: float
    jobs: list[SparkJob]
    jvm_calls: int

    @property
    def stages(self) -> int:
        return sum(job.stages for job in self.jobs)


@dataclass(frozen=True)
class RunCost:
    seconds: float
    cpu_seconds: float
    jvm_calls: int
    steps: dict[str, StepCost]
    """In the order the steps started."""
    jobs: list[SparkJob]
    received_rows: int | None
    """The landing rows raw_events read, if it ran."""
    outcomes: dict[str, str]
    """Each check's outcome: "passed", or "FAILED" with its severity."""

    @property
    def stages(self) -> int:
        return sum(job.stages for job in self.jobs)

    def jobs_outside_steps(self) -> list[SparkJob]:
        inside = {job.job_id for step in self.steps.values() for job in step.jobs}
        return [job for job in self.jobs if job.job_id not in inside]


def step_costs(
    marks: list[tuple[str, str, float, float, int]], jobs: list[SparkJob]
) -> dict[str, StepCost]:
    """Each step's wall and CPU seconds, jobs and JVM calls, from (step, event, time, tree CPU,
    JVM calls) marks."""
    starts = {
        step: (at, cpu, calls) for step, event, at, cpu, calls in marks if event == "STEP_START"
    }
    costs = {}
    for step, event, ended, cpu_end, calls_end in marks:
        if event == "STEP_START":
            continue
        started, cpu_start, calls_start = starts[step]
        costs[step] = StepCost(
            seconds=ended - started,
            cpu_seconds=cpu_end - cpu_start,
            jobs=[job for job in jobs if started <= job.submitted <= ended],
            jvm_calls=calls_end - calls_start,
        )
    return dict(sorted(costs.items(), key=lambda item: starts[item[0]][0]))
