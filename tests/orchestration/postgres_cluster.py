"""A throwaway PostgreSQL cluster of Debian's ``postgresql`` package, for the Dagster instance.

``initdb`` into a fresh temporary directory, ``pg_ctl`` on a free loopback port, and what a
deployment gets from its database administrator: a login role with a password (scram-sha-256
over TCP), not a superuser, owning one database. PostgreSQL
refuses to run as root, and the suite runs as root here and in CI: the server then runs as the
``postgres`` system user the package creates, in a directory that user owns.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg2
from system_requirements import DEBIAN_POSTGRES_BINDIRS, postgres_bindir

from profile_store.launchers.child_processes import free_port

MISSING = (
    "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: "
    "install them first (Debian: apt-get install -y postgresql)"
)
SERVER_USER = "postgres"
SUPERUSER = "postgres"


class PostgresMissing(RuntimeError):
    """The server binaries are not on this machine."""


def server_bindir(debian_bindirs: str = DEBIAN_POSTGRES_BINDIRS) -> Path:
    """Where ``initdb`` and ``pg_ctl`` are (``system_requirements.postgres_bindir``)."""
    found = postgres_bindir(debian_bindirs)
    if found is None:
        raise PostgresMissing(MISSING)
    return found


@dataclass(frozen=True)
class PostgresCluster:
    host: str
    port: int
    username: str
    password: str
    db_name: str

    def dagster_env(self) -> dict[str, str]:
        """The variables ``examples/dagster.yaml`` reads, pointing at this cluster."""
        return {
            "DAGSTER_PG_HOST": self.host,
            "DAGSTER_PG_PORT": str(self.port),
            "DAGSTER_PG_DB": self.db_name,
            "DAGSTER_PG_USERNAME": self.username,
            "DAGSTER_PG_PASSWORD": self.password,
        }

    def connect(self):
        return psycopg2.connect(
            host=self.host,
            port=self.port,
            user=self.username,
            password=self.password,
            dbname=self.db_name,
        )


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", SERVER_USER, "--", *command] if os.geteuid() == 0 else command


def _run(command: list[str], log: Path) -> None:
    completed = subprocess.run(
        _as_server_user(command), capture_output=True, text=True, check=False
    )
    if completed.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:] if log.exists() else ""
        raise RuntimeError(
            f"{' '.join(command)} exited {completed.returncode}:\n"
            f"{completed.stdout}{completed.stderr}{tail}"
        )


@contextmanager
def temporary_postgres(
    db_name: str = "dagster", username: str = "dagster"
) -> Iterator[PostgresCluster]:
    """A running cluster where ``username`` (no superuser) owns ``db_name``; stopped and
    deleted on exit."""
    bindir = server_bindir()
    root = Path(tempfile.mkdtemp(prefix="profiles-postgres-"))
    data, log = root / "data", root / "server.log"
    started = False
    try:
        superuser_password = secrets.token_urlsafe(16)
        (root / "password").write_text(superuser_password)
        if os.geteuid() == 0:
            try:
                server_user = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise PostgresMissing(MISSING) from None
            for path in (root, root / "password"):
                os.chown(path, server_user.pw_uid, server_user.pw_gid)
        _run(
            [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER]
            + ["--pwfile", str(root / "password"), "--auth-host=scram-sha-256"]
            + ["--auth-local=peer", "--encoding=UTF8", "--no-sync"],
            log,
        )
        port = free_port()
        # Loopback TCP only; the Unix socket in the cluster's own directory (the package's
        # /var/run/postgresql may be missing, or another cluster's).
        options = f"-c listen_addresses=127.0.0.1 -p {port} -c unix_socket_directories={root}"
        _run(
            [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options, "-w", "start"],
            log,
        )
        started = True
        password = secrets.token_urlsafe(16)
        admin = psycopg2.connect(
            host="127.0.0.1",
            port=port,
            user=SUPERUSER,
            password=superuser_password,
            dbname="postgres",
        )
        try:
            admin.autocommit = True
            with admin.cursor() as cursor:
                cursor.execute(f'CREATE ROLE "{username}" LOGIN PASSWORD %s', (password,))
                cursor.execute(f'CREATE DATABASE "{db_name}" OWNER "{username}"')
        finally:
            admin.close()
        yield PostgresCluster("127.0.0.1", port, username, password, db_name)
    finally:
        if started:
            _run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], log)
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def postgres_or_fail() -> Iterator[PostgresCluster]:
    """``temporary_postgres`` for a fixture: without the server binaries the test fails (never
    skips) with a line naming the package to install."""
    import pytest

    try:
        server_bindir()
    except PostgresMissing as missing:
        pytest.fail(str(missing), pytrace=False)
    with temporary_postgres() as cluster:
        yield cluster
