"""The fixtures the orchestration modules share."""

from __future__ import annotations

import pytest
from postgres_cluster import postgres_or_fail


@pytest.fixture(scope="module")
def postgres():
    """A throwaway PostgreSQL cluster for the module; without the server binaries the module
    fails (never skips) with a line naming the package to install."""
    with postgres_or_fail() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def production_env(postgres, tmp_path_factory) -> dict[str, str]:
    """What ``examples/dagster.yaml`` reads from the environment, as a deployment sets it: the
    PostgreSQL server, the compute log directory, and the gRPC call timeout the file's comment
    asks for."""
    return {
        **postgres.dagster_env(),
        "DAGSTER_COMPUTE_LOGS_DIR": str(tmp_path_factory.mktemp("compute_logs")),
        "DAGSTER_GRPC_TIMEOUT_SECONDS": "180",
    }
