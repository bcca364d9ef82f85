"""How the suite's Spark drivers start: the options ``tests/conftest.py`` puts in
``SPARK_SUBMIT_OPTS`` for every driver of the session (its own sessions, launched runs,
``profiles`` subprocesses), set once before the workers start.

Every such driver lives seconds to minutes over days of a few thousand events, and the suite is
CPU-bound on 2 cores, so three things that pay back only on long-lived JVMs or large data are
left out:

- C2: its compilations of Spark's code cost a third of the CPU of such a run and never pay back
  before the JVM exits; C1 alone runs the same code.
- Spark SQL's code generation: compiling each query's generated Java (Janino) took a quarter of a
  small day's driver CPU; Spark's interpreted expressions give the same rows. The real-Spark
  group (``tests/real_spark``) keeps Spark's own code generation (``SPARK_CODEGEN_DEFAULTS``).
- Loading and verifying Spark's ~20,000 classes from the jars at every start: the classes a
  driver loads are put once in a class-data-sharing archive (``start_building``), which every
  driver maps instead (a session starts in about half the CPU).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"
TINY_DATA_SPARK_SETTINGS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}
SPARK_CODEGEN_DEFAULTS = {
    "spark.sql.codegen.wholeStage": "true",
    "spark.sql.codegen.factoryMode": "FALLBACK",
}
"""Spark's own values of ``TINY_DATA_SPARK_SETTINGS``, for runs that keep them (a run's
``--conf``, as ``SPARK_CONF_JSON`` gives it, overrides a driver's ``-Dspark.*`` options)."""


class ClassArchiveError(RuntimeError):
    """The archive could not be built; the message holds the step's output."""


def spark_driver_options(archive: Path | None) -> str:
    """``SPARK_SUBMIT_OPTS`` for the suite's drivers: C1 only, the tiny-data settings as the
    ``spark.*`` system properties a driver's SparkConf reads, and the class archive if any.

    (A JVM agent beside the archive, JFR for one, crashed a driver on JDK 17.0.15 in
    ``KlassFactory::check_shared_class_file_load_hook``: profile a driver without it.)"""
    options = [SHORT_LIVED_JVM_OPTIONS]
    options += [f"-D{key}={value}" for key, value in TINY_DATA_SPARK_SETTINGS.items()]
    if archive is not None:
        options.append(f"-XX:SharedArchiveFile={archive}")
    return " ".join(options)


def executor_java_options(driver_options: str) -> str:
    """The JVM options of ``driver_options`` for a cluster's executors (Spark refuses
    ``-Dspark.*`` options there: the driver's settings reach the executors by themselves)."""
    options = driver_options.split()
    return " ".join(option for option in options if not option.startswith("-Dspark."))


def _java() -> Path:
    """The java that pyspark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not found:
        raise ClassArchiveError("no java on PATH and JAVA_HOME unset")
    return Path(found).resolve()


def _pyspark_jars() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "jars"


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def archive_path(cache: Path) -> Path:
    """Where the archive for this pyspark installation (a virtualenv's) and its java goes.

    The name holds the installation, then what the archive depends on: the JVM build, the jars
    and the workload that fills it (a stale archive would only be refused by the JVM, which
    then loads every class from the jars as before)."""
    java = _java()
    jars = _pyspark_jars()
    parts = [str(java), str(java.stat().st_mtime_ns), str(jars.stat().st_mtime_ns)]
    parts += sorted(f"{jar.name}:{jar.stat().st_size}" for jar in jars.glob("*.jar"))
    parts.append(inspect.getsource(_load_the_pipelines_classes))
    return cache / f"spark-classes-{_digest([str(jars)])}-{_digest(parts)}.jsa"


def start_building(archive: Path) -> subprocess.Popen:
    """Build ``archive`` in a process of its own, beside the first tests: a driver that starts
    before the archive is in place runs without it (a JVM skips a missing archive silently).
    A failed build leaves ``failure_marker(archive)`` with its output."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    failure_marker(archive).unlink(missing_ok=True)
    return subprocess.Popen(
        [sys.executable, __file__, "build", str(archive)],
        cwd=REPO,
        env=_with_repo_on_path(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def failure_marker(archive: Path) -> Path:
    return archive.with_name(archive.name + ".failed")


def wait_for(archive: Path, timeout_s: float = 900) -> None:
    """Until ``archive`` is in place; ``ClassArchiveError`` with the build's output if it
    failed or did not end in time."""
    deadline = time.monotonic() + timeout_s
    while not archive.exists():
        if failure_marker(archive).exists():
            raise ClassArchiveError(failure_marker(archive).read_text())
        if time.monotonic() > deadline:
            raise ClassArchiveError(f"{archive} was not built within {timeout_s:.0f} s")
        time.sleep(1)


def _with_repo_on_path(env) -> dict[str, str]:
    return {
        **env,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")])),
    }


def build(archive: Path) -> None:
    """A driver runs a small workload of the pipeline's kinds of query, its loaded classes are
    listed, then ``java -Xshare:dump`` archives them (about a minute of CPU); the archive is
    moved into place whole."""
    with tempfile.TemporaryDirectory(prefix="class-archive-") as work:
        work = Path(work)
        class_list, report = work / "classes.lst", work / "driver.json"
        env = {
            **_with_repo_on_path(os.environ),
            "SPARK_SUBMIT_OPTS": f"{SHORT_LIVED_JVM_OPTIONS} -XX:DumpLoadedClassList={class_list}",
        }
        loaded = subprocess.run(
            [sys.executable, __file__, "load-classes", str(report), str(work)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if loaded.returncode != 0:
            raise ClassArchiveError(f"the class-listing driver failed:\n{loaded.stderr[-3000:]}")
        driver = json.loads(report.read_text())
        building = work / archive.name
        dumped = subprocess.run(
            [
                str(Path(driver["java_home"]) / "bin" / "java"),
                "-Xshare:dump",
                f"-XX:SharedClassListFile={class_list}",
                f"-XX:SharedArchiveFile={building}",
                "-cp",
                driver["class_path"],
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if dumped.returncode != 0 or not building.exists():
            output = dumped.stdout + dumped.stderr
            raise ClassArchiveError(f"java -Xshare:dump failed:\n{output[-3000:]}")
        partial = archive.with_name(archive.name + ".partial")
        shutil.move(building, partial)
        os.replace(partial, archive)
    remove_other_archives(archive)


def remove_other_archives(archive: Path) -> None:
    """The archives of an earlier java or pyspark of the same installation as ``archive`` (200 MB
    each) are deleted, not those of other virtualenvs; a JVM that maps one keeps its pages until
    it exits."""
    installation = archive.name.rsplit("-", 1)[0]
    for other in archive.parent.glob(f"{installation}-*.jsa"):
        if other != archive:
            other.unlink(missing_ok=True)


def _load_the_pipelines_classes(report: Path, work: Path) -> None:
    """A driver started as the pipeline starts one, running the pipeline's kinds of query over a
    few rows (JSON lines read as text, Parquet written by partition and read back, aggregates
    with theta sketches, broadcast and shuffled joins, windows, explode, Arrow batches through
    Python); then its JVM's class path and home go to ``report``."""
    import pyarrow as pa
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    from profile_store.spark.session import spark_session_from_env

    spark = spark_session_from_env({"SPARK_SHUFFLE_PARTITIONS": "2"})
    lines = work / "lines"
    lines.mkdir()
    rows = [
        {"id": f"u{i % 7}", "day": f"2026-11-0{1 + i % 2}", "kind": ["a", "b"][i % 2], "n": i}
        for i in range(40)
    ]
    (lines / "part-0.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    schema = "id string, day string, kind string, n long"
    events = spark.read.text(str(lines)).select(F.from_json("value", schema).alias("e"))
    events = events.select("e.*").withColumn("tags", F.array("kind", "id"))
    events.write.mode("overwrite").partitionBy("day").parquet(str(work / "events"))
    events = spark.read.parquet(str(work / "events")).cache()
    sketches = events.groupBy("day", "kind").agg(
        F.theta_sketch_agg("id").alias("sketch"), F.count("*").alias("rows")
    )
    sketches = sketches.withColumn("users", F.theta_sketch_estimate("sketch"))
    ranked = events.withColumn("rank", F.row_number().over(Window.partitionBy("id").orderBy("n")))
    people = events.groupBy("id").agg(F.max("n").alias("last"))
    joined = ranked.join(F.broadcast(people), "id").join(
        events.select("id", F.explode("tags").alias("tag")).distinct(), "id", "left"
    )

    def doubled(batches):
        for batch in batches:
            yield pa.RecordBatch.from_pydict({"n": [2 * n for n in batch.column("n").to_pylist()]})

    doubled_rows = events.select("n").mapInArrow(doubled, "n long")
    spark.createDataFrame([("u1", 1)], "id string, n long").join(joined, "id").toArrow()
    sketches.collect()
    doubled_rows.repartition(2).sortWithinPartitions("n").collect()
    jvm = spark.sparkContext._jvm
    report.write_text(
        json.dumps(
            {
                "class_path": jvm.System.getProperty("java.class.path"),
                "java_home": jvm.System.getProperty("java.home"),
            }
        )
    )
    spark.stop()


def main(argv: list[str]) -> int:
    """``build ARCHIVE`` (a failure leaves its marker), or ``load-classes REPORT WORK`` (the
    workload, in the driver whose classes are listed)."""
    if argv[0] == "load-classes":
        _load_the_pipelines_classes(Path(argv[1]), Path(argv[2]))
        return 0
    archive = Path(argv[1])
    try:
        build(archive)
    except Exception as error:  # the marker is what the suite reads
        failure_marker(archive).write_text(f"building {archive.name} failed: {error}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
