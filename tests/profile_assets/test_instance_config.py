"""The instance configurations queue runs of this code location one at a time.

Runs share the lake and HBase, and the identity and profile assets fold each day into the one
before, so the laptop instance (``examples/dagster.local.yaml``, installed by ``make ui``) and the
production example (``examples/dagster.yaml``) both limit runs tagged with the code location to
one. The UI smoke test checks that the location name in that tag is the one the UI shows.
``tests/orchestration/test_postgres_instance.py`` runs the production example on PostgreSQL.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import sqlalchemy
from dagster import DagsterInstance
from dagster._config import process_config
from dagster._core.instance.config import dagster_instance_config
from dagster._core.run_coordinator import QueuedRunCoordinator
from dagster_postgres.utils import pg_config, pg_url_from_config

REPO = Path(__file__).resolve().parents[2]
LOCAL = REPO / "examples" / "dagster.local.yaml"
PRODUCTION = REPO / "examples" / "dagster.yaml"
ONE_RUN_OF_THE_LOCATION = {
    "key": "dagster/code_location",
    "value": "profile_assets.definitions",
    "limit": 1,
}


def test_the_local_instance_queues_runs_of_the_code_location_one_at_a_time(tmp_path):
    shutil.copy(LOCAL, tmp_path / "dagster.yaml")
    instance = DagsterInstance.from_config(str(tmp_path))
    try:
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
        assert limits == [ONE_RUN_OF_THE_LOCATION]
    finally:
        instance.dispose()


def test_the_production_example_is_valid_and_has_the_same_limit(tmp_path):
    shutil.copy(PRODUCTION, tmp_path / "dagster.yaml")
    # Validates the whole file against Dagster's instance schema without reaching Postgres.
    config, _ = dagster_instance_config(str(tmp_path))
    assert config["concurrency"]["runs"]["tag_concurrency_limits"] == [ONE_RUN_OF_THE_LOCATION]
    assert set(config["storage"]["postgres"]["postgres_db"]["password"]) == {"env"}


def test_the_production_examples_storage_url_loads_the_driver_the_postgres_extra_installs(
    tmp_path, monkeypatch
):
    shutil.copy(PRODUCTION, tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))
    for name, value in {
        "DAGSTER_PG_HOST": "db.internal",
        "DAGSTER_PG_PORT": "6543",
        "DAGSTER_PG_DB": "dagster",
        "DAGSTER_PG_USERNAME": "dagster",
        "DAGSTER_PG_PASSWORD": "secret",
    }.items():
        monkeypatch.setenv(name, value)
    storage = process_config(pg_config(), config["storage"]["postgres"])
    assert storage.success, storage.errors
    # Loads the DBAPI module without connecting: a bare postgresql:// fails here, SQLAlchemy 2.1
    # asking for psycopg 3, which dagster-postgres does not use.
    engine = sqlalchemy.create_engine(pg_url_from_config(storage.value))
    assert (engine.url.host, engine.url.port, engine.dialect.driver) == (
        "db.internal",
        6543,
        "psycopg2",
    )
