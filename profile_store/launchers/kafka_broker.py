"""A real Apache Kafka on this machine: one KRaft node, broker and controller in one JVM.

The real-time path writes events to Kafka; the demo, the tests and the benchmarks run against
the real broker rather than a fake, as the gateway is checked against a real Apache HBase
(``profile_store.launchers.apache_hbase``). The jars of ``kafka_2.13`` are resolved from Maven
Central by Maven into the jar cache (``profile_store.launchers.maven_jars``), once. Production
points ``PROFILES_KAFKA_BOOTSTRAP_SERVERS`` at its own cluster instead.

The node is formatted (``kafka-storage format``, i.e. ``kafka.tools.StorageTool``) on the first
start of a data directory, then started with ``kafka.Kafka``; it is ready when a metadata request
answers. Its ports and cluster id are kept in the data directory, so a restart over the same
directory (after ``stop()`` or ``kill()``) serves the same topics and committed offsets on the
same address. Usage::

    with KafkaBroker(data_dir) as broker:
        producer = confluent_kafka.Producer({"bootstrap.servers": broker.bootstrap_servers})

    python -m profile_store.launchers.kafka_broker --data-dir data/kafka --port 9092  # make kafka
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from confluent_kafka.admin import AdminClient

from profile_store.launchers.child_processes import (
    free_port,
    log_tail,
    stop_process,
    wait_for_interrupt,
)
from profile_store.launchers.maven_jars import JarResolutionError, resolve_jars

KAFKA_VERSION = "4.4.0"
# Kafka 4.x logs through SLF4J 1.7 to Log4j 2; its distribution ships this binding beside the
# jars, the Maven artifact does not depend on it (without it the broker logs nothing).
LOG4J_SLF4J_BINDING = "org.apache.logging.log4j:log4j-slf4j-impl:2.25.5"
MINIMUM_JAVA = 17
DEFAULT_HEAP = "512m"

# What Kafka's bin/kafka-run-class.sh passes to the broker's JVM.
JVM_OPTIONS = (
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)

_LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log_file}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.state.name = state.change.logger
logger.state.level = WARN
"""


class KafkaStartError(RuntimeError):
    """Kafka could not be resolved or did not come up; the message says why (and its log)."""


def kafka_jars(version: str = KAFKA_VERSION) -> list[Path]:
    """Kafka's runtime jars, resolved by Maven on first use (``maven_jars``)."""
    try:
        return resolve_jars(
            f"apache-kafka-{version}",
            [f"org.apache.kafka:kafka_2.13:{version}", LOG4J_SLF4J_BINDING],
        )
    except JarResolutionError as error:
        raise KafkaStartError(str(error)) from error


def java_major_version(java: str) -> int:
    """The feature release of ``java`` (17 for ``17.0.15``), from ``java -version``."""
    output = subprocess.run([java, "-version"], capture_output=True, text=True).stderr
    match = re.search(r'version "(\d+)(?:\.(\d+))?', output)
    if match is None:
        raise KafkaStartError(f"could not read the Java version from `{java} -version`: {output}")
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def require_java() -> str:
    """The ``java`` to run Kafka with; Kafka 4 brokers need Java 17 or later."""
    java = shutil.which("java")
    hint = "(Debian: apt-get install -y openjdk-17-jre-headless)"
    if java is None:
        raise KafkaStartError(f"Java {MINIMUM_JAVA} or later is needed to run Apache Kafka {hint}")
    major = java_major_version(java)
    if major < MINIMUM_JAVA:
        raise KafkaStartError(
            f"Apache Kafka {KAFKA_VERSION} needs Java {MINIMUM_JAVA} or later, {java} is Java "
            f"{major} {hint}"
        )
    return java


def new_cluster_id() -> str:
    """A Kafka cluster id: 16 random bytes, URL-safe base64 without padding (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def server_properties(
    data_dir: Path, port: int, controller_port: int, node_id: int = 1
) -> dict[str, str]:
    """One combined broker+controller node; internal topics sized for one machine."""
    return {
        "process.roles": "broker,controller",
        "node.id": str(node_id),
        "controller.quorum.voters": f"{node_id}@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(data_dir / "kraft"),
        # Topics are created by the project with their partition count (event_bus.topics).
        "auto.create.topics.enable": "false",
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "share.coordinator.state.topic.num.partitions": "1",
        # A consumer group of one member starts at once instead of after 3 s.
        "group.initial.rebalance.delay.ms": "0",
    }


def _properties_text(settings: dict[str, str]) -> str:
    return "".join(f"{name}={value}\n" for name, value in settings.items())


class KafkaBroker:
    """A single-node KRaft Apache Kafka over ``data_dir``, on 127.0.0.1."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        port: int = 0,
        version: str = KAFKA_VERSION,
        heap: str = DEFAULT_HEAP,
        startup_timeout: float = 120.0,
    ) -> None:
        """``port`` 0: the port this data directory used before, else a free one."""
        self.data_dir = Path(data_dir).resolve()
        self.requested_port = port
        self.version = version
        self.heap = heap
        self.startup_timeout = startup_timeout
        self.port: int | None = None
        self.controller_port: int | None = None
        self.cluster_id: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._out: IO[bytes] | None = None

    @property
    def bootstrap_servers(self) -> str:
        if self.port is None:
            raise RuntimeError("the broker has not been started")
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        """The broker's JVM (None before the start), e.g. for a benchmark to sample its CPU."""
        return None if self._process is None else self._process.pid

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> KafkaBroker:
        """Resolve the jars (once), format a new data directory, start, wait until answered."""
        if self.running:
            raise RuntimeError(f"the broker over {self.data_dir} is already running")
        java = require_java()
        classpath = os.pathsep.join(str(jar) for jar in kafka_jars(self.version))
        for sub in ("conf", "logs"):
            (self.data_dir / sub).mkdir(parents=True, exist_ok=True)
        self._load_identity()
        conf = self.data_dir / "conf"
        (conf / "server.properties").write_text(_properties_text(self._server_properties()))
        (conf / "log4j2.properties").write_text(
            _LOG4J2.format(log_file=self.data_dir / "logs" / "server.log")
        )
        if not (self.data_dir / "kraft" / "meta.properties").exists():
            self._format(java, classpath)
        self._out = open(self.data_dir / "logs" / "kafka.out", "ab")  # noqa: SIM115 - lives with the JVM
        self._process = subprocess.Popen(
            [
                *self._java_command(java, classpath, self.heap),
                "kafka.Kafka",
                str(conf / "server.properties"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_until_answers()
        except BaseException:
            self.kill()
            raise
        return self

    def stop(self, timeout: float = 60.0) -> None:
        """SIGTERM: Kafka's shutdown hook closes its logs cleanly; killed after ``timeout``."""
        self._end(signal.SIGTERM, timeout)

    def kill(self) -> None:
        """SIGKILL, as a crash: the next start recovers the logs from the data directory."""
        self._end(signal.SIGKILL, 30.0)

    def restart(self) -> KafkaBroker:
        """Stop, then start again over the same data directory on the same port."""
        self.stop()
        return self.start()

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def environment(self) -> dict[str, str]:
        """The variables that point the project's real-time path at this broker."""
        return {"PROFILES_KAFKA_BOOTSTRAP_SERVERS": self.bootstrap_servers}

    def log_tail(self, lines: int = 40) -> str:
        return log_tail((self.data_dir / "logs").glob("*"), lines)

    # -- internals -------------------------------------------------------------------------------

    def _server_properties(self) -> dict[str, str]:
        """This node's ``server.properties`` (a node of a cluster has its own)."""
        assert self.port is not None and self.controller_port is not None
        return server_properties(self.data_dir, self.port, self.controller_port)

    def _load_identity(self) -> None:
        """Ports and cluster id: kept from the previous start of this data directory."""
        identity_file = self.data_dir / "broker.json"
        previous = json.loads(identity_file.read_text()) if identity_file.exists() else {}
        self.port = self.requested_port or previous.get("port") or free_port()
        self.controller_port = previous.get("controller_port") or free_port()
        self.cluster_id = previous.get("cluster_id") or new_cluster_id()
        identity_file.write_text(
            json.dumps(
                {
                    "port": self.port,
                    "controller_port": self.controller_port,
                    "cluster_id": self.cluster_id,
                }
            )
        )

    def _java_command(self, java: str, classpath: str, heap: str) -> list[str]:
        return [
            java,
            f"-Xmx{heap}",
            *JVM_OPTIONS,
            *shlex.split(os.environ.get("KAFKA_OPTS", "")),  # as kafka-run-class.sh reads it
            f"-Dlog4j2.configurationFile={self.data_dir / 'conf' / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self.data_dir / 'logs'}",
            "-cp",
            classpath,
        ]

    def _format(self, java: str, classpath: str) -> None:
        """``kafka-storage format``: the node's metadata log, with this cluster id."""
        completed = subprocess.run(
            [
                *self._java_command(java, classpath, "256m"),
                "kafka.tools.StorageTool",
                "format",
                "--cluster-id",
                str(self.cluster_id),
                "--config",
                str(self.data_dir / "conf" / "server.properties"),
            ],
            capture_output=True,
            text=True,
            timeout=self.startup_timeout,
        )
        if completed.returncode != 0:
            raise KafkaStartError(
                f"formatting {self.data_dir / 'kraft'} failed (exit {completed.returncode}):\n"
                + (completed.stdout + completed.stderr)[-4000:]
            )

    def _wait_until_answers(self) -> None:
        """Until a metadata request lists this broker."""
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        deadline = time.monotonic() + self.startup_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            assert self._process is not None
            if self._process.poll() is not None:
                raise KafkaStartError(
                    f"Kafka exited ({self._process.returncode}):\n{self.log_tail()}"
                )
            try:
                if admin.list_topics(timeout=2).brokers:
                    return
            except Exception as error:  # not listening yet
                last_error = error
            time.sleep(0.25)
        raise KafkaStartError(
            f"Kafka did not answer on {self.bootstrap_servers} within "
            f"{self.startup_timeout:.0f} s ({last_error!r}):\n{self.log_tail()}"
        )

    def _end(self, signum: int, timeout: float) -> None:
        if self._process is not None:
            stop_process(self._process, timeout, signum)
            self._process = None
        if self._out is not None:
            self._out.close()
            self._out = None


@contextlib.contextmanager
def temporary_broker(**kwargs: object) -> Iterator[KafkaBroker]:
    """A broker over a fresh temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="apache-kafka-") as data_dir:
        # kwargs: KafkaBroker's keyword options, passed through unchecked.
        broker = KafkaBroker(data_dir, **kwargs).start()  # type: ignore[arg-type]
        try:
            yield broker
        finally:
            broker.kill()


def run_in_foreground(data_dir: Path, port: int) -> int:
    """Run the broker until Ctrl-C or SIGTERM (``make kafka``); exit 1 if it cannot start."""
    started = time.monotonic()
    try:
        broker = KafkaBroker(data_dir, port=port).start()
    except KafkaStartError as error:
        print(f"kafka: {error}", file=sys.stderr)
        return 1
    try:
        print(
            f"Apache Kafka {broker.version} up in {time.monotonic() - started:.0f} s (KRaft, one "
            f"node; data and logs in {broker.data_dir}); point the project at it with:\n"
            + " ".join(f"{k}={v}" for k, v in broker.environment().items())
            + "\nCtrl-C stops it.",
            flush=True,
        )
        wait_for_interrupt()
        print("stopping Apache Kafka ...", flush=True)
    finally:
        broker.stop()
    return 0
