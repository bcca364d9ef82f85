"""Fixtures shared by the whole suite: one Spark session, a local S3 server, served processes."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
# Every Spark driver the suite starts (this process's session, launched runs, `profiles run`
# subprocesses; spark-submit reads SPARK_SUBMIT_OPTS) lives for seconds to minutes over small
# days: C2's compilations of Spark's code cost a third of the CPU of such a run and never pay
# back before the JVM exits, and the suite is CPU-bound on 2 cores. C1 alone runs the same code.
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_LIVED_JVM_OPTIONS)
# The same for Apache HBase's JVMs (HBASE_OPTS, as bin/hbase reads it).
os.environ.setdefault("HBASE_OPTS", SHORT_LIVED_JVM_OPTIONS)

REPO = Path(__file__).resolve().parents[1]
# The directories whose tests share the slowest fixtures (whole pipeline runs, a real HBase, a
# webserver and daemon): started first, so that the other worker takes the small ones meanwhile.
SLOWEST_FIRST = ("real_spark", "orchestration", "conformance", "erasure", "imports")


def distribution_group(relative: str) -> str:
    """A test's unit of distribution (``make test`` runs 2 pytest-xdist workers): its directory
    under ``tests/``, or its own file at the top. A group runs whole on one worker, in file
    order, so the session and module fixtures its tests share are built once, and tests that
    build on the previous ones (the launched runs) keep their order."""
    parts = relative.split("::")[0].split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[-1]


class DirectoryScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling, the scope being ``distribution_group``."""

    def _split_scope(self, nodeid: str) -> str:
        return distribution_group(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log) -> DirectoryScheduling:
    return DirectoryScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest groups first (a stable sort: file order within each group)."""

    def rank(item: pytest.Item) -> int:
        group = distribution_group(item.nodeid)
        return SLOWEST_FIRST.index(group) if group in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from profile_store.spark.session import local_spark_config

    builder = SparkSession.builder.appName("profiles-tests")
    for key, value in local_spark_config(shuffle_partitions=2).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    """A local S3-compatible server (moto) on a free port, for the S3 lake tests."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture(scope="session")
def headless_dom() -> Callable[[str], str]:
    """The DOM of a page after its scripts ran, rendered by Debian's chromium (headless).

    Only loopback is reachable for the browser (every other host resolves to nothing), so a page
    that needs the internet renders empty here.
    """
    import shutil

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (Debian: apt-get install -y chromium)")

    def render(url: str) -> str:
        completed = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "--virtual-time-budget=15000",
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert completed.returncode == 0, completed.stderr[-2000:]
        return completed.stdout

    return render


@pytest.fixture
def serve_process(tmp_path) -> Iterator[Callable[[list[str]], tuple[str, subprocess.Popen]]]:
    """Start a serve command (with ``--port 0``) as a real process; returns its URL and process.

    The URL is read from uvicorn's log line once it listens; a process still running at the
    end of the test is killed.
    """
    processes: list[subprocess.Popen] = []

    def start(command: list[str]) -> tuple[str, subprocess.Popen]:
        log_path = tmp_path / f"serve-{len(processes)}.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(
                command, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ)
            )
        processes.append(process)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            match = re.search(r"Uvicorn running on (http://\S+)", log_path.read_text())
            if match:
                return match.group(1), process
            assert process.poll() is None, log_path.read_text()
            time.sleep(0.05)
        raise AssertionError(f"serve did not start:\n{log_path.read_text()}")

    yield start
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()
