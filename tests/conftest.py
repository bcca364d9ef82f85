"""What the whole suite shares: the machine's requirements checked first, how the tests are spread
over the workers, one Spark session, a local S3 server, served processes, a browser, and
embedded gateways holding the known data sets (``known_audience``, ``known_profiles``)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import happybase
import pytest
from fastapi.testclient import TestClient
from known_audience import BUILDER_TENANTS, audience_rows, write_audience, write_builder_tables
from known_profiles import write_profile_table
from suite_jvms import (
    SHORT_LIVED_JVM_OPTIONS,
    archive_path,
    spark_driver_options,
    start_building,
)
from suite_tiers import Guard, deselected_kinds, launch_failure, mark_kinds
from system_requirements import REQUIREMENTS, chromium, missing
from xdist.scheduler import LoadScopeScheduling

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.saved import AUDIENCE_TABLE, SavedAudiences
from profile_store.audiences.sketch_table import delete_rows, sketch_table_opener
from profile_store.hbase.pool import hbase_pool, table_opener
from profile_store.hbase.settings import HBaseSettings
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.launchers.maven_jars import cache_root
from profile_store.service.app import create_app
from profile_store.service.tenants import Tenants

os.environ.setdefault("PYSPARK_PYTHON", os.sys.executable)
# Apache HBase's JVMs (HBASE_OPTS, as bin/hbase reads it) and Apache Kafka's (KAFKA_OPTS, as
# kafka-run-class.sh reads it) live for a module or a session: C1 only, as the Spark drivers
# (``suite_jvms``; their SPARK_SUBMIT_OPTS is set in ``pytest_configure``).
os.environ.setdefault("HBASE_OPTS", SHORT_LIVED_JVM_OPTIONS)
os.environ.setdefault("KAFKA_OPTS", SHORT_LIVED_JVM_OPTIONS)

REPO = Path(__file__).resolve().parents[1]
# The groups (see ``distribution_group``) whose tests share the slowest fixtures (whole pipeline
# runs, a real HBase, a webserver and daemon), slowest first as the suite's durations show them:
# started first, so that the other workers take the small ones meanwhile.
SLOWEST_FIRST = (
    "orchestration/test_launched_runs.py",
    "real_spark",
    "deploy",
    "realtime",
    "launchers",
    "profile_assets/test_empty_days.py",
    "conformance",
    "orchestration/test_postgres_instance.py",
    "imports",
    "erasure",
    "profile_assets/test_automation.py",
    "profile_assets/test_audience_pipeline.py",
    "identity",
)


ARCHIVE_BUILD = pytest.StashKey[subprocess.Popen]()
DESELECTED_KINDS = pytest.StashKey[set[str]]()
GUARD = pytest.StashKey[Guard]()


def pytest_configure(config: pytest.Config) -> None:
    """The kinds of test the run's ``-m`` deselects (``make test-fast``) are guarded against
    (``suite_tiers``): pytest-xdist's controller makes the guard, its workers adopt it. Then the
    Spark drivers' options, unless the run deselects the JVM tests."""
    deselected = config.stash[DESELECTED_KINDS] = deselected_kinds(config.option.markexpr)
    if deselected:
        worker = hasattr(config, "workerinput")
        config.stash[GUARD] = Guard.adopt() if worker else Guard.install(deselected)
    if "jvm" not in deselected:
        configure_spark_drivers(config)


def configure_spark_drivers(config: pytest.Config) -> None:
    """Every Spark driver of the session (this process's, launched runs, ``profiles``
    subprocesses; spark-submit reads ``SPARK_SUBMIT_OPTS``) starts with the suite's options and
    class archive (``suite_jvms``), set here once, before pytest-xdist starts the workers, which
    inherit them. A missing archive is built meanwhile. A ``SPARK_SUBMIT_OPTS`` already set is
    left as it is."""
    if "SPARK_SUBMIT_OPTS" in os.environ or missing():  # missing: sessionstart says what
        return
    archive = archive_path(cache_root() / "spark-class-archives")
    if not archive.exists():
        config.stash[ARCHIVE_BUILD] = start_building(archive)
    os.environ["SPARK_SUBMIT_OPTS"] = spark_driver_options(archive)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The archive's build is waited for (a failed one fails ``tests/spark/test_suite_jvms.py``
    with its output); the controller's guard is removed."""
    build = config.stash.get(ARCHIVE_BUILD, None)
    if build is not None:
        build.wait()
    guard = config.stash.get(GUARD, None)
    if guard is not None and not hasattr(config, "workerinput"):
        guard.remove()


def pytest_sessionstart(session: pytest.Session) -> None:
    """A machine that lacks what the run's tests need fails the run here, before any test."""
    deselected = session.config.stash[DESELECTED_KINDS]
    lacking = missing(tuple(r for r in REQUIREMENTS if r.kind not in deselected))
    if lacking:
        pytest.exit("; ".join(lacking), returncode=pytest.ExitCode.USAGE_ERROR)


# The Dagster layer's tests each build their own lake, gateway and runs, and so do the launched
# runs' modules (each its own webserver and daemon): nothing to share, so each file is a group of
# its own and the workers split them.
GROUPED_BY_FILE = ("profile_assets", "orchestration")


def distribution_group(relative: str) -> str:
    """A test's unit of distribution (``make test`` runs 2 pytest-xdist workers): its directory
    under ``tests/``, or its own file at the top or in a directory of ``GROUPED_BY_FILE``. A
    group runs whole on one worker, in file order, so the session and module fixtures its tests
    share are built once, and tests that build on the previous ones (the launched runs) keep
    their order."""
    parts = relative.split("::")[0].split("/")
    if len(parts) > 2 and parts[0] == "tests":
        return "/".join(parts[1:]) if parts[1] in GROUPED_BY_FILE else parts[1]
    return parts[-1]


class DirectoryScheduling(LoadScopeScheduling):
    """pytest-xdist's scope scheduling, the scope being ``distribution_group``."""

    def _split_scope(self, nodeid: str) -> str:
        return distribution_group(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log) -> DirectoryScheduling:
    # pytest-xdist otherwise hands out the groups with the most tests first (its
    # ``--loadscope-reorder``, on by default), which started the slowest groups, each of a few
    # tests, last: the suite then ended on one worker running them while the others idled.
    config.option.loadscopereorder = False
    return DirectoryScheduling(config, log)


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test marked with its kinds (``suite_tiers``); the slowest groups first (a stable
    sort: file order within each group)."""
    mark_kinds(items)

    def rank(item: pytest.Item) -> int:
        group = distribution_group(item.nodeid)
        return SLOWEST_FIRST.index(group) if group in SLOWEST_FIRST else len(SLOWEST_FIRST)

    items.sort(key=rank)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport:
    """A test (its setup, call or teardown) that started a command of a kind the run deselects
    fails, saying which marker it lacks."""
    report = yield
    guard = item.config.stash.get(GUARD, None)
    launches = guard.new_launches() if guard is not None else []
    if launches:
        report.outcome = "failed"
        earlier = f"\n\n{report.longrepr}" if report.longrepr else ""
        report.longrepr = launch_failure(launches) + earlier
    return report


@pytest.fixture(scope="session")
def spark():
    from pyspark.sql import SparkSession

    from profile_store.spark.function_lookups import remember_function_lookups
    from profile_store.spark.session import local_spark_config

    remember_function_lookups()  # as the pipeline's sessions (``prepare_this_process``)
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
    browser = chromium()  # present: checked when the session started

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


# -- embedded gateways holding known data ---------------------------------------------------------


@pytest.fixture(scope="session")
def preloaded_gateway(tmp_path_factory) -> Callable[..., contextlib.AbstractContextManager]:
    """A factory: ``with preloaded_gateway(name, load) as gateway`` is an embedded gateway over a
    fresh directory, ``load`` run on a connection to it before it is handed out."""

    @contextlib.contextmanager
    def start(name: str, load: Callable[[happybase.Connection], None]) -> Iterator[EmbeddedGateway]:
        with EmbeddedGateway(tmp_path_factory.mktemp(name)) as gateway:
            connection = happybase.Connection(**gateway.connection_kwargs())
            try:
                load(connection)
            finally:
                connection.close()
            yield gateway

    return start


@pytest.fixture(scope="session")
def sketch_rows() -> list[dict]:
    """The audience data set's rows, for tests that write a variant of it."""
    return audience_rows()


@pytest.fixture(scope="session")
def fill_sketch_table() -> Callable[[happybase.Connection], None]:
    """``write_audience``, for tests that build their own HBase with the audience data set."""
    return write_audience


@pytest.fixture(scope="session")
def sketch_gateway(preloaded_gateway) -> Iterator[EmbeddedGateway]:
    """An embedded gateway holding the audience data set, shared by the whole session."""
    with preloaded_gateway("audience-hbase", write_audience) as gateway:
        yield gateway


@pytest.fixture(scope="session")
def gateway_settings(sketch_gateway: EmbeddedGateway) -> HBaseSettings:
    """Settings that reach the audience gateway as an external Thrift server."""
    return HBaseSettings(host=sketch_gateway.host, port=sketch_gateway.port)


@pytest.fixture(scope="session")
def audience_engine(gateway_settings: HBaseSettings) -> Iterator[AudienceEngine]:
    with hbase_pool(gateway_settings) as pool:
        yield AudienceEngine(sketch_table_opener(pool))


@pytest.fixture(scope="session")
def builder_gateway(preloaded_gateway) -> Iterator[EmbeddedGateway]:
    """The audience data set as ``audience_sketches`` leaves it, plus an empty ``audiences``
    table, for the audience builder."""
    with preloaded_gateway("builder-hbase", write_builder_tables) as gateway:
        yield gateway


@pytest.fixture
def builder_pool(builder_gateway: EmbeddedGateway) -> Iterator[happybase.ConnectionPool]:
    """A pool on the builder's gateway, its ``audiences`` table emptied first."""
    settings = HBaseSettings(host=builder_gateway.host, port=builder_gateway.port)
    with hbase_pool(settings) as pool:
        with pool.connection() as connection:
            table = connection.table(AUDIENCE_TABLE)
            delete_rows(table, [key for key, _ in table.scan()])
        yield pool


@pytest.fixture
def builder_client(builder_pool) -> Iterator[TestClient]:
    """The HTTP app with the builder's endpoints over ``builder_pool``."""
    app = create_app(
        AudienceEngine(sketch_table_opener(builder_pool)),
        Tenants.from_config(BUILDER_TENANTS),
        saved=SavedAudiences(table_opener(builder_pool, AUDIENCE_TABLE)),
    )
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@pytest.fixture(scope="module")
def profile_gateway(preloaded_gateway) -> Iterator[EmbeddedGateway]:
    """An embedded gateway holding the profiles data set, for one test module."""
    with preloaded_gateway("profiles-hbase", write_profile_table) as gateway:
        yield gateway


@pytest.fixture(scope="module")
def profile_settings(profile_gateway: EmbeddedGateway) -> HBaseSettings:
    """Settings that reach the module's profiles gateway as an external Thrift server."""
    return HBaseSettings(host=profile_gateway.host, port=profile_gateway.port)
