"""A real Apache HBase on this machine: standalone master and region server, with Thrift-1.

The embedded gateway promises to answer like Apache HBase; this module runs the real thing so
that the promise can be checked (the differential suite, the pipeline on both, the benchmark)
and so that a user can try the pipeline against it. Nothing is committed or downloaded by hand:
the jars of ``hbase-server`` and ``hbase-thrift`` are resolved from Maven Central by Maven into a
cache outside the repository (``profile_store.launchers.maven_jars``), once.

Standalone mode is HBase's own single-JVM layout (``hbase.cluster.distributed=false``): master,
region server and an in-process ZooKeeper in one JVM over the local filesystem. The Thrift-1
server (``org.apache.hadoop.hbase.thrift.ThriftServer``, what ``hbase thrift start`` runs) is a
second JVM; ``thrift_server()`` starts more of them (framed, compact) against the same master.
The JVM options are those HBase's ``bin/hbase`` adds on Java 17. Usage::

    with ApacheHBase(data_dir) as hbase:
        connection = happybase.Connection(**hbase.connection_kwargs())

    python -m profile_store.cli.launchers apache-hbase [--data-dir DIR] [--port 9090]  # make hbase
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

import happybase

from profile_store.launchers.child_processes import (
    free_port,
    log_tail,
    stop_process,
)
from profile_store.launchers.maven_jars import JarResolutionError, resolve_jars

HBASE_VERSION = "2.6.1"
ARTIFACTS = ("hbase-server", "hbase-thrift")
THRIFT_IDLE_TIMEOUT = "hbase.thrift.server.socket.read.timeout"
"""Milliseconds a Thrift-1 server keeps a connection that sends nothing (HBase's default 60000)."""
TRANSPORT_FLAGS = {"buffered": (), "framed": ("-f",)}
PROTOCOL_FLAGS = {"binary": (), "compact": ("-c",)}

# What HBase's bin/hbase adds when it runs on Java 11 or later.
JAVA17_OPTIONS = (
    "-XX:+UseG1GC",
    "-Dorg.apache.hbase.thirdparty.io.netty.tryReflectionSetAccessible=true",
    "--add-modules",
    "jdk.unsupported",
    "--add-opens",
    "java.base/java.nio=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-exports",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports",
    "java.security.jgss/sun.security.krb5=ALL-UNNAMED",
)

_LOG4J = """log4j.rootLogger=INFO,FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=${hbase.log.file}
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{2}: %m%n
"""


class HBaseStartError(RuntimeError):
    """The real HBase could not be resolved or did not come up; the message holds its log."""


def hbase_jars(version: str = HBASE_VERSION) -> list[Path]:
    """HBase's runtime jars, resolved by Maven on first use (``maven_jars``)."""
    try:
        return resolve_jars(
            f"apache-hbase-{version}", [f"org.apache.hbase:{a}:{version}" for a in ARTIFACTS]
        )
    except JarResolutionError as error:
        raise HBaseStartError(str(error)) from error


def _site_xml(settings: dict[str, str]) -> str:
    properties = "\n".join(
        f"  <property><name>{name}</name><value>{value}</value></property>"
        for name, value in settings.items()
    )
    return f"<configuration>\n{properties}\n</configuration>\n"


class ApacheHBase:
    """A standalone Apache HBase over ``data_dir`` with a buffered/binary Thrift-1 server."""

    def __init__(
        self,
        data_dir: str | Path,
        *,
        thrift_port: int = 0,
        version: str = HBASE_VERSION,
        startup_timeout: float = 180.0,
        heap: str = "1g",
        thrift_settings: Mapping[str, str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.thrift_settings = dict(thrift_settings or {})
        """Configuration of every Thrift server started here (e.g. ``THRIFT_IDLE_TIMEOUT``)."""
        self.version = version
        self.startup_timeout = startup_timeout
        self.heap = heap
        self.requested_thrift_port = thrift_port
        self.host = "127.0.0.1"  # every server binds the loopback
        self.port: int | None = None
        self.zookeeper_port: int | None = None
        self._processes: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []
        self._classpath = ""
        self._site: dict[str, str] = {}

    # -- life cycle ------------------------------------------------------------------------------

    def start(self) -> ApacheHBase:
        """Resolve the jars (once), start the master and the Thrift server, wait until answered."""
        jars = [str(jar) for jar in hbase_jars(self.version)]
        conf = self.data_dir / "conf"
        conf.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "logs").mkdir(exist_ok=True)
        self.zookeeper_port = free_port()
        self._site = {
            "hbase.cluster.distributed": "false",
            "hbase.rootdir": (self.data_dir / "hbase").as_uri(),
            "hbase.tmp.dir": str(self.data_dir / "tmp"),
            "hbase.zookeeper.quorum": "127.0.0.1",
            "hbase.zookeeper.property.clientPort": str(self.zookeeper_port),
            "hbase.zookeeper.property.dataDir": str(self.data_dir / "zookeeper"),
            "hbase.master.info.port": "-1",
            "hbase.regionserver.info.port": "-1",
            "hbase.thrift.info.port": "-1",
            # The master's and region server's RPC ports are bound as port 0 (the
            # defaults, 16000 and 16020, would let only one HBase run on a machine).
            "hbase.localcluster.assign.random.ports": "true",
            # The local filesystem has no hflush/hsync; HBase's standalone docs set this.
            "hbase.unsafe.stream.capability.enforce": "false",
        }
        (conf / "hbase-site.xml").write_text(_site_xml(self._site))
        (conf / "log4j.properties").write_text(_LOG4J)
        self._classpath = os.pathsep.join([str(conf), *jars])
        try:
            self._java(
                "master", f"-Xmx{self.heap}", "org.apache.hadoop.hbase.master.HMaster", "start"
            )
            self.port = self.thrift_server("buffered", "binary", self.requested_thrift_port)
        except BaseException:
            self.stop()
            raise
        return self

    def thrift_server(
        self,
        transport: str = "buffered",
        protocol: str = "binary",
        port: int = 0,
        settings: Mapping[str, str] | None = None,
    ) -> int:
        """Start one more Thrift-1 server (e.g. framed/compact) on this master; returns its port.

        ``settings`` (over ``thrift_settings``) configure this server alone: they go into an
        ``hbase-site.xml`` of its own, first on its classpath, as on a host that runs only a
        Thrift server. (Its ``-D`` options do not reach every setting: the server's own
        command-line defaults win over them, e.g. for ``THRIFT_IDLE_TIMEOUT``.)
        """
        port = port or free_port()
        conf = self.data_dir / f"conf-thrift-{port}"
        conf.mkdir(exist_ok=True)
        configured = {**self._site, **self.thrift_settings, **(settings or {})}
        (conf / "hbase-site.xml").write_text(_site_xml(configured))
        (conf / "log4j.properties").write_text(_LOG4J)
        self._java(
            f"thrift-{port}",
            "-Xmx256m",
            "org.apache.hadoop.hbase.thrift.ThriftServer",
            "-b",
            "127.0.0.1",
            "-p",
            str(port),
            *TRANSPORT_FLAGS[transport],
            *PROTOCOL_FLAGS[protocol],
            "start",
            classpath=os.pathsep.join([str(conf), self._classpath]),
        )
        self._wait_until_answers(port, transport, protocol)
        return port

    def stop(self, timeout: float = 60.0, graceful: bool = True) -> None:
        """Stop the Thrift servers, then the master (SIGTERM: HBase's shutdown hook flushes).

        ``graceful=False`` kills them instead (seconds instead of tens), for throw-away data.
        """
        for _name, process, log in reversed(self._processes):
            stop_process(process, timeout, signal.SIGTERM if graceful else signal.SIGKILL)
            log.close()
        self._processes.clear()

    def restart(self, timeout: float = 60.0) -> ApacheHBase:
        """Stop (SIGTERM), then start over the same data directory with the Thrift server on
        the same port: its clients find it again at the address they know."""
        port = self.port
        self.stop(timeout)
        self.requested_thrift_port = port or self.requested_thrift_port
        return self.start()

    def __enter__(self) -> ApacheHBase:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def pids(self) -> tuple[int, ...]:
        """The running JVMs (the master with its region server, the Thrift servers): what a
        benchmark counts as the store's CPU."""
        return tuple(process.pid for _, process, _ in self._processes)

    # -- clients ---------------------------------------------------------------------------------

    def connection_kwargs(
        self, port: int | None = None, transport: str = "buffered", protocol: str = "binary"
    ) -> dict[str, object]:
        return {
            "host": self.host,
            "port": port or self.port,
            "transport": transport,
            "protocol": protocol,
        }

    def environment(self) -> dict[str, str]:
        """The variables that point the pipeline, the CLI and the service at this HBase."""
        return {"HBASE_THRIFT_HOST": self.host, "HBASE_THRIFT_PORT": str(self.port)}

    # -- internals -------------------------------------------------------------------------------

    def _java(
        self, name: str, *arguments: str, classpath: str | None = None
    ) -> subprocess.Popen[bytes]:
        log_file = self.data_dir / "logs" / f"{name}.log"
        out = open(self.data_dir / "logs" / f"{name}.out", "ab")  # noqa: SIM115 - lives with the JVM
        process = subprocess.Popen(
            [
                "java",
                *JAVA17_OPTIONS,
                *shlex.split(os.environ.get("HBASE_OPTS", "")),  # as bin/hbase reads it
                f"-Dhbase.log.file={log_file}",
                "-Dhbase.log.dir=" + str(log_file.parent),
                "-cp",
                classpath or self._classpath,
                *arguments,
            ],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._processes.append((name, process, out))
        return process

    def _wait_until_answers(self, port: int, transport: str, protocol: str) -> None:
        """Until ``getTableNames`` succeeds: the master is up and ``hbase:meta`` is online."""
        deadline = time.monotonic() + self.startup_timeout
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            for name, process, _ in self._processes:
                if process.poll() is not None:
                    raise HBaseStartError(
                        f"{name} exited ({process.returncode}):\n{self.log_tail()}"
                    )
            try:
                connection = happybase.Connection(
                    **self.connection_kwargs(port, transport, protocol), timeout=5000
                )
                try:
                    connection.tables()
                    return
                finally:
                    connection.close()
            except Exception as error:  # not listening yet, or the master not initialized
                last_error = error
                time.sleep(0.5)
        raise HBaseStartError(
            f"HBase did not answer on port {port} within {self.startup_timeout:.0f} s "
            f"({last_error!r}):\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        return log_tail((self.data_dir / "logs").glob("*"), lines)


@contextlib.contextmanager
def temporary_hbase(**kwargs: object) -> Iterator[ApacheHBase]:
    """A real HBase over a fresh temporary directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="apache-hbase-") as data_dir:
        # kwargs: ApacheHBase's keyword options, passed through unchecked.
        hbase = ApacheHBase(data_dir, **kwargs).start()  # type: ignore[arg-type]
        try:
            yield hbase
        finally:
            hbase.stop(graceful=False)
