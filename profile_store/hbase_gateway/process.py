"""Run the embedded gateway as a child process: start on a free port, wait until it answers, stop.

Used by the HBase pool (and so the Dagster resource, the CLI and the service), the tests and the
benchmarks; the child runs the gateway's program (``python -m profile_store.cli.hbase_gateway``,
a separate process, so no import of the command-line layer from here). The child binds port 0 and
publishes the port it got in a ready file, so there is no window in which another process can
take a port picked in advance. The child also exits when its stdin closes, so a parent that dies
without cleaning up does not leave a gateway behind; its worker processes die with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from types import TracebackType
from typing import IO

import profile_store
from profile_store.launchers.child_processes import stop_process

_PACKAGE_ROOT = str(Path(profile_store.__file__).resolve().parent.parent)


def child_pids(pid: int) -> list[int]:
    """The live child processes of ``pid`` (from ``/proc``; no psutil)."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (command) "
        if int(fields[1]) == pid and fields[0] != "Z":
            children.append(int(entry))
    return children


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


class GatewayStartError(RuntimeError):
    """The gateway process exited or did not answer in time; the message quotes its log."""


class EmbeddedGateway:
    """A gateway subprocess over ``data_dir``; use as a context manager or start()/stop()."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        transport: str = "buffered",
        protocol: str = "binary",
        startup_timeout: float = 30.0,
        log_path: str | Path | None = None,
        server_args: tuple[str, ...] = (),
        workers: int | None = None,
        metrics_port: int | None = None,
    ) -> None:
        """``server_args``: more ``hbase-gateway`` options, e.g. ``("--max-connections", "8")``;
        ``workers``: serving processes (None: ``hbase-gateway``'s default, see ``--workers``);
        ``metrics_port``: serve Prometheus metrics there (0: a free port, then in
        ``metrics_port`` once started; None: off, what a pipeline run needs)."""
        self.data_dir = Path(data_dir)
        self.requested_metrics_port = metrics_port
        self.metrics_port: int | None = None
        self.server_args = tuple(server_args)
        if workers is not None and workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers}")
        self.workers = workers  # None: left to the gateway (a client loads none of the server)
        self.host = host
        self.requested_port = port
        self.transport = transport
        self.protocol = protocol
        self.startup_timeout = startup_timeout
        self.log_path = Path(log_path) if log_path else self.data_dir / "gateway.log"
        self.port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return None if self._process is None else self._process.pid

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def connection_kwargs(self) -> dict[str, object]:
        """Keyword arguments for ``happybase.Connection`` / ``ConnectionPool``."""
        if self.port is None:
            raise RuntimeError("the gateway is not started")
        return {
            "host": self.host,
            "port": self.port,
            "transport": self.transport,
            "protocol": self.protocol,
        }

    def start(self) -> EmbeddedGateway:
        if self.running:
            return self
        self.data_dir.mkdir(parents=True, exist_ok=True)
        ready_file = self.data_dir / f".gateway-{uuid.uuid4().hex}.ready"
        command = [
            sys.executable,
            "-m",
            "profile_store.cli.hbase_gateway",
            "--data-dir",
            str(self.data_dir),
            "--host",
            self.host,
            "--port",
            str(self.requested_port),
            "--transport",
            self.transport,
            "--protocol",
            self.protocol,
            "--ready-file",
            str(ready_file),
            "--exit-with-stdin",
            *(() if self.workers is None else ("--workers", str(self.workers))),
            *self.server_args,
        ]
        if self.requested_metrics_port is not None:
            command += ["--metrics-port", str(self.requested_metrics_port)]
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - lives as long as the child
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT, env=env
        )
        try:
            self.port = self._wait_for_port(ready_file)
            self._wait_until_answers()
        except BaseException:
            self.kill()
            raise
        finally:
            ready_file.unlink(missing_ok=True)
        return self

    @property
    def metrics_url(self) -> str:
        if self.metrics_port is None:
            raise RuntimeError("the gateway serves no metrics (start it with metrics_port)")
        return f"http://{self.host}:{self.metrics_port}/metrics"

    def _wait_for_port(self, ready_file: Path) -> int:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if ready_file.exists():
                ready = json.loads(ready_file.read_text())
                self.metrics_port = ready.get("metrics_port")
                return int(ready["port"])
            if not self.running:
                raise GatewayStartError(f"the gateway exited during start-up:\n{self._log_tail()}")
            time.sleep(0.005)  # a read command waits for this: poll finely
        raise GatewayStartError(
            f"the gateway did not listen within {self.startup_timeout}s:\n{self._log_tail()}"
        )

    def _wait_until_answers(self) -> None:
        import happybase

        deadline = time.monotonic() + self.startup_timeout
        while True:
            try:
                connection = happybase.Connection(timeout=5000, **self.connection_kwargs())
                try:
                    connection.tables()
                    return
                finally:
                    connection.close()
            except Exception as exc:
                if time.monotonic() > deadline or not self.running:
                    raise GatewayStartError(
                        f"the gateway does not answer: {exc}\n{self._log_tail()}"
                    ) from exc
                time.sleep(0.05)

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM (graceful: in-flight calls finish, the WAL is checkpointed); returns the code."""
        process = self._process
        if process is None:
            return None
        stop_process(process, timeout)
        self._cleanup()
        return process.returncode

    def kill(self, timeout: float = 10.0) -> None:
        """SIGKILL with no chance to clean up (crash-durability tests); returns once the worker
        processes, which the kernel kills with their parent, are gone too."""
        process = self._process
        if process is None:
            return
        if process.poll() is None:
            workers = child_pids(process.pid)
            process.kill()
            process.wait()
            deadline = time.monotonic() + timeout
            while any(map(pid_alive, workers)):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"gateway workers {workers} outlived their parent")
                time.sleep(0.01)
        self._cleanup()

    def _cleanup(self) -> None:
        if self._process is not None and self._process.stdin is not None:
            self._process.stdin.close()
        if self._log is not None:
            self._log.close()
            self._log = None

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> EmbeddedGateway:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
