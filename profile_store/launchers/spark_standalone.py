"""A Spark standalone cluster on this machine: one master and one worker, from pyspark itself.

``local[*]`` runs executors inside the driver's JVM, so it cannot show what a cluster needs:
executors in JVMs of their own, started by a worker, whose Python workers import this project
and write rows to HBase over the network. This module starts pyspark's own
``org.apache.spark.deploy.master.Master`` and ``...deploy.worker.Worker`` (through
``bin/spark-class`` of the installed pyspark, so the versions always match), bound to 127.0.0.1
on free ports, the worker with a small fixed number of cores and memory; it waits until the
worker has registered and stops both on exit. Usage::

    with SparkStandalone(work_dir) as cluster:
        env = {"SPARK_MASTER": cluster.master_url}

    python -m profile_store.cli.launchers spark-standalone [--work-dir DIR] [--cores 2]
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


class ClusterStartError(RuntimeError):
    """The master or the worker did not come up; the message holds their logs."""


def spark_home() -> Path:
    """The installed pyspark's directory: it holds ``bin/spark-class`` and the jars."""
    return Path(pyspark.__file__).parent


class SparkStandalone:
    """A master and one worker over ``work_dir`` (logs, the worker's application files)."""

    def __init__(
        self,
        work_dir: str | Path,
        *,
        cores: int = 2,
        memory: str = "2g",
        startup_timeout: float = 90.0,
        environment: dict[str, str] | None = None,
    ) -> None:
        """``environment``: extra variables for the worker, which its executors inherit."""
        self.work_dir = Path(work_dir)
        self.cores = cores
        self.memory = memory
        self.startup_timeout = startup_timeout
        self.environment = dict(environment or {})
        self.port: int | None = None
        self.webui_port: int | None = None
        self._processes: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []

    @property
    def master_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the cluster is not started")
        return f"spark://127.0.0.1:{self.port}"

    def start(self) -> SparkStandalone:
        (self.work_dir / "logs").mkdir(parents=True, exist_ok=True)
        self.port, self.webui_port = free_port(), free_port()
        try:
            self._spark_class(
                "master",
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(self.port)),
                *("--webui-port", str(self.webui_port)),
            )
            self._wait_for(lambda status: True, "the master's status page")
            self._spark_class(
                "worker",
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                *("--host", "127.0.0.1", "--cores", str(self.cores), "--memory", self.memory),
                *("--webui-port", str(free_port()), "--work-dir", str(self.work_dir / "work")),
            )
            self._wait_for(lambda status: status.get("aliveworkers", 0) >= 1, "a live worker")
        except BaseException:
            self.stop()
            raise
        return self

    def status(self) -> dict:
        """The master's own JSON status (workers, cores, running applications)."""
        url = f"http://127.0.0.1:{self.webui_port}/json/"
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop the worker (and with it its executors), then the master."""
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

    def _spark_class(self, name: str, *arguments: str) -> None:
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home()),
            "SPARK_LOCAL_IP": "127.0.0.1",
            **self.environment,
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

    def _wait_for(self, ready, what: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
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
        raise ClusterStartError(
            f"no {what} within {self.startup_timeout:.0f} s ({last_error!r}):\n{self.log_tail()}"
        )
