"""The walkthrough of docs/importing.md on real data: CDNOW's purchase log, imported and answered.

The source is ``CDNOW_master.txt`` as the ``lifetimes`` package ships it (MIT). Its first two
days are imported with ``examples/cdnow.yaml``, run through every asset and check with
``profiles run`` (as the UI would; the partitions start in 1997 for it), and a fixed set of
audience questions answered from HBase is compared with exact answers that DuckDB computes from
the source file itself.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import happybase
import pytest

from profile_store.audiences.engine import AudienceEngine
from profile_store.audiences.sketch_table import SKETCH_TABLE
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.imports.mapping import load_mapping
from profile_store.imports.source_import import import_source
from profile_store.lake.storage import LocalLakeStorage

REPO = Path(__file__).resolve().parents[2]
FIRST, LAST = "1997-01-01", "1997-01-02"
APP = "cdnow.store"


def cdnow_master() -> Path:
    """The file inside the installed package (found without importing it)."""
    spec = importlib.util.find_spec("lifetimes")
    assert spec is not None and spec.submodule_search_locations, "lifetimes is not installed"
    return Path(spec.submodule_search_locations[0]) / "datasets" / "CDNOW_master.txt"


def first_days_purchases() -> list[str]:
    """The lines of the first two days' purchases."""
    days = {FIRST.replace("-", ""), LAST.replace("-", "")}
    lines = cdnow_master().read_text().splitlines()[1:]
    return [line for line in lines if line.split()[1:2] and line.split()[1] in days]


def first_days_slice(target: Path) -> Path:
    """The header and the purchases of the first two days: a slice of the real file."""
    header = cdnow_master().read_text().splitlines()[0]
    target.write_text("\n".join([header, *first_days_purchases()]) + "\n")
    return target


@pytest.fixture(scope="module")
def cdnow_lake(spark, tmp_path_factory):
    """The slice imported and run through the pipeline; the lake and HBase directories."""
    work = tmp_path_factory.mktemp("cdnow")
    storage = LocalLakeStorage(work / "lake")
    result = import_source(
        spark,
        storage,
        str(first_days_slice(work / "CDNOW_first_days.txt")),
        load_mapping(REPO / "examples" / "cdnow.yaml"),
        emit=lambda line: None,
    )
    env = {
        **os.environ,
        "PROFILES_LAKE_ROOT": str(work / "lake"),
        "PROFILES_HBASE_DATA_DIR": str(work / "hbase"),
        "PROFILES_START_DATE": FIRST,
        "SPARK_SHUFFLE_PARTITIONS": "2",
        "PYSPARK_PYTHON": sys.executable,
    }
    env.pop("DAGSTER_HOME", None)
    completed = subprocess.run(
        [sys.executable, "-m", "profile_store.cli", "run", FIRST, LAST],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, (completed.stdout + completed.stderr)[-6000:]
    return work, result, completed.stdout


def exact_users(sql_where: str, min_count: int = 1) -> set[str]:
    """Customers with at least ``min_count`` purchases matching ``sql_where``, from the file."""
    rows = duckdb.sql(
        f"""
        with lines as (
            select regexp_split_to_array(trim(line), '\\s+') as v
            from read_csv('{cdnow_master()}', columns = {{'line': 'VARCHAR'}},
                          header = true, delim = '\\x01', quote = '')
        ), purchases as (
            select v[1] as customer, strptime(v[2], '%Y%m%d')::date as day, v[3] as cds
            from lines
        )
        select customer from purchases where {sql_where}
        group by customer having count(*) >= {min_count}
        """
    ).fetchall()
    return {customer for (customer,) in rows}


def leaf(date_from: str = FIRST, date_to: str = LAST, **extra) -> dict:
    return {
        "app_id": APP,
        "event_type": "purchase",
        "date_from": date_from,
        "date_to": date_to,
        **extra,
    }


IN_RANGE = f"day between '{FIRST}' and '{LAST}'"
QUESTIONS = {
    "bought in the first two days": (leaf(), lambda: exact_users(IN_RANGE)),
    "bought on day 1 and again on day 2 or 3": (
        {"intersection": [leaf(date_to=FIRST), leaf(date_from="1997-01-02")]},
        lambda: (
            exact_users(f"day = '{FIRST}'") & exact_users(f"day between '1997-01-02' and '{LAST}'")
        ),
    ),
    "bought at least twice": (leaf(min_count=2), lambda: exact_users(IN_RANGE, min_count=2)),
    "bought a single CD at a time": (
        leaf(attributes={"number_of_cds": "1"}),
        lambda: exact_users(f"{IN_RANGE} and cds = '1'"),
    ),
    "bought, but never a single CD": (
        {"difference": [leaf(), leaf(attributes={"number_of_cds": "1"})]},
        lambda: exact_users(IN_RANGE) - exact_users(f"{IN_RANGE} and cds = '1'"),
    ),
}


def test_the_import_reports_every_purchase_of_the_slice_accepted(cdnow_lake):
    _, result, _ = cdnow_lake
    assert result.check.lines == len(first_days_purchases())
    assert result.check.quarantined == {}
    assert [str(d.day) for d in result.published] == [FIRST, LAST]


def test_every_day_succeeds_naming_the_checks_it_had_nothing_to_judge(cdnow_lake):
    # One id per customer and no answer key: the identity and master checks have nothing to
    # judge, and the day's line says which instead of "every check passed".
    _, _, output = cdnow_lake
    days = [line for line in output.splitlines() if ": run " in line]
    assert len(days) == 2, output[-3000:]
    for line in days:
        assert "succeeded, " in line and "had nothing to judge: " in line, line
        assert "identity_quality_check" in line, line
    assert "FAILED" not in output and "WARNED" not in output, output[-3000:]
    assert "no answer key" in output


@pytest.fixture(scope="module")
def engine(cdnow_lake):
    """The audience engine over the run's sketch table (its embedded HBase store)."""
    work, _, _ = cdnow_lake
    with EmbeddedGateway(work / "hbase") as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        try:
            yield AudienceEngine(lambda: _table(connection))
        finally:
            connection.close()


@pytest.mark.parametrize("question", sorted(QUESTIONS))
def test_audience_answers_match_duckdb_over_the_source_file(engine, question):
    tree, exact = QUESTIONS[question]
    expected = len(exact())
    answer = engine.estimate(tree)
    assert answer.exact, "a few hundred customers: the sketches hold every one of them"
    assert answer.estimate == expected
    assert answer.lower_95 <= expected <= answer.upper_95


class _table:
    """A context manager handing the engine the sketch table of one open connection."""

    def __init__(self, connection: happybase.Connection) -> None:
        self.connection = connection

    def __enter__(self) -> happybase.Table:
        return self.connection.table(SKETCH_TABLE)

    def __exit__(self, *exc: object) -> None:
        return None
