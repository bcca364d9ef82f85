"""A Spark standalone cluster on this machine: one master and its workers, from pyspark itself.

``local[*]`` runs executors inside the driver's JVM, so it cannot show what a cluster needs:
executors in JVMs of their own, started by a worker, whose Python workers import this project and
write rows to HBase over the network. This module starts pyspark's own
``org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker`` (through
``bin/spark-class`` of the installed pyspark, so the versions always match), bound to 127.0.0.1 on
free ports, each worker (one by default) with a small fixed number of cores and memory; it waits
until every worker has registered (``start_timeout``: JVMs start slowly on a busy machine) and stops
them all on exit. The master's REST submission server (``spark.master.rest.enabled``, on by default
since Spark 4.1, on the fixed port 6066) is off: the pipeline submits in client mode, and a fixed
port would let only one cluster run on a machine. Executors connect back to their driver, so a
driver of this cluster must bind 127.0.0.1 too (``SPARK_LOCAL_IP``, in ``environment()``): by
default it binds the address of the machine's host name, which may be one no executor can reach.
Usage::

    with SparkStandalone(work_dir) as cluster:
        env = cluster.environment()  # SPARK_MASTER and SPARK_LOCAL_IP for the driver

    python -m profile_store.cli.launchers spark-standalone [--work-dir DIR] [--cores 2]
        [--workers 1]

Two workers of one core each, rather than one of two, put a job's tasks in two executor JVMs:
its shuffles then cross the network between executors, as on a real cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import IO

import pyspark

from profile_store.launchers.child_processes import (
    free_port,
    log_tail,
    stop_process,
)

DEFAULT_START_TIMEOUT = 300.0
LOCAL_IP = "127.0.0.1"
# Java options of the master only, after any of the user's SPARK_MASTER_OPTS.
MASTER_OPTIONS = "-Dspark.master.rest.enabled=false"


class ClusterStartError(RuntimeError):
    """The master or the worker did not come up; the message holds their logs."""


def spark_home() -> Path:
    """The installed pyspark's directory: it holds ``bin/spark-class`` and the jars."""
    return Path(pyspark.__file__).parent


class SparkStandalone:
    """A master and ``workers`` workers over ``work_dir`` (logs, the workers' application files)."""

    def __init__(
        self,
        work_dir: str | Path,
        *,
        cores: int = 2,
        memory: str = "2g",
        workers: int = 1,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        environment: dict[str, str] | None = None,
    ) -> None:
        """``cores`` and ``memory``: of each worker. ``start_timeout``: seconds for the master and
        then the workers to come up, each. ``environment``: extra variables for the workers,
        which their executors inherit."""
        if workers < 1:
            raise ValueError(f"workers: expected at least 1, got {workers}")
        self.work_dir = Path(work_dir)
        self.cores = cores
        self.workers = workers
        self.memory = memory
        self.start_timeout = start_timeout
        self.worker_environment = dict(environment or {})
        self.port: int | None = None
        self.webui_port: int | None = None
        self._processes: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []

    @property
    def master_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the cluster is not started")
        return f"spark://{LOCAL_IP}:{self.port}"

    def environment(self) -> dict[str, str]:
        """The variables that run a driver (the pipeline) on this cluster."""
        return {"SPARK_MASTER": self.master_url, "SPARK_LOCAL_IP": LOCAL_IP}

    def start(self) -> SparkStandalone:
        (self.work_dir / "logs").mkdir(parents=True, exist_ok=True)
        self.port, self.webui_port = free_port(), free_port()
        try:
            user_options = os.environ.get("SPARK_MASTER_OPTS", "")
            self._spark_class(
                "master",
                "org.apache.spark.deploy.master.Master",
                *("--host", LOCAL_IP, "--port", str(self.port)),
                *("--webui-port", str(self.webui_port)),
                SPARK_MASTER_OPTS=f"{user_options} {MASTER_OPTIONS}".strip(),
            )
            self._wait_for(lambda status: True, "the master's status page did not answer")
            for number in range(1, self.workers + 1):
                self._spark_class(
                    "worker" if number == 1 else f"worker-{number}",
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    *("--host", LOCAL_IP, "--cores", str(self.cores), "--memory", self.memory),
                    *("--webui-port", str(free_port()), "--work-dir", str(self.work_dir / "work")),
                )
            self._wait_for(
                lambda status: status.get("aliveworkers", 0) >= self.workers,
                f"not all {self.workers} workers registered with the master"
                if self.workers > 1
                else "no worker registered with the master",
            )
        except BaseException:
            self.stop()
            raise
        return self

    def status(self) -> dict:
        """The master's own JSON status (workers, cores, running applications)."""
        url = f"http://{LOCAL_IP}:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the workers (and with them their executors), then the master."""
        for _name, process, log in reversed(self._processes):
            stop_process(process, timeout)
            log.close()
        self._processes.clear()

    def __enter__(self) -> SparkStandalone:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def log_tail(self, lines: int = 40) -> str:
        return log_tail((self.work_dir / "logs").glob("*.log"), lines)

    def _spark_class(self, name: str, *arguments: str, **variables: str) -> None:
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": LOCAL_IP,
            **self.worker_environment,
            **variables,
        }
        log = open(self.work_dir / "logs" / f"{name}.log", "ab")  # noqa: SIM115 - lives with the JVM
        process = subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *arguments],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self._processes.append((name, process, log))

    def _wait_for(self, ready, failure: str) -> None:
        """Until ``ready(status)``; else ``ClusterStartError`` saying ``failure`` and the logs."""
        deadline = time.monotonic() + self.start_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            for name, process, _ in self._processes:
                if process.poll() is not None:
                    raise ClusterStartError(
                        f"the {name} exited ({process.returncode}):\n{self.log_tail()}"
                    )
            try:
                if ready(self.status()):
                    return
            except OSError as error:  # not listening yet
                last_error = error
            time.sleep(0.5)
        cause = "" if last_error is None else f" ({last_error!r})"
        raise ClusterStartError(
            f"{failure} within {self.start_timeout:g} s{cause}; a busy machine may need a longer "
            f"start timeout (--start-timeout):\n{self.log_tail()}"
        )
