"""Fixtures for the gateway suite: real gateway subprocesses, talked to through happybase.

* ``gateway``: one buffered/binary gateway for the whole session.
* ``connection``: a fresh ``happybase.Connection`` to it (closed after the test).
* ``make_table(families=None, name=None)``: creates a uniquely named table, deleted afterwards.
* ``table_name``: a fresh unique table name (not created).
* ``table``: a table with families ``cf`` (3 versions) and ``other`` (1 version).
* ``transport_gateway``: one gateway per transport x protocol, parametrized (ids like
  ``framed-compact``).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator

import happybase
import pytest

from profile_store.hbase_gateway.process import EmbeddedGateway

TRANSPORT_PROTOCOLS = [
    ("buffered", "binary"),
    ("buffered", "compact"),
    ("framed", "binary"),
    ("framed", "compact"),
]

_table_numbers = itertools.count(1)

MakeTable = Callable[..., happybase.Table]


@pytest.fixture(scope="session")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedGateway]:
    with EmbeddedGateway(tmp_path_factory.mktemp("gateway")) as running:
        yield running


@pytest.fixture(scope="session", params=TRANSPORT_PROTOCOLS, ids=lambda p: "-".join(p))
def transport_gateway(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EmbeddedGateway]:
    transport, protocol = request.param
    data_dir = tmp_path_factory.mktemp(f"gateway-{transport}-{protocol}")
    with EmbeddedGateway(data_dir, transport=transport, protocol=protocol) as running:
        yield running


@pytest.fixture
def connection(gateway: EmbeddedGateway) -> Iterator[happybase.Connection]:
    conn = happybase.Connection(**gateway.connection_kwargs())
    yield conn
    conn.close()


def unique_table_name(request: pytest.FixtureRequest) -> str:
    base = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:80]
    return f"{base}_{next(_table_numbers)}"


@pytest.fixture
def table_name(request: pytest.FixtureRequest) -> str:
    return unique_table_name(request)


@pytest.fixture
def make_table(
    connection: happybase.Connection, request: pytest.FixtureRequest
) -> Iterator[MakeTable]:
    created: list[str] = []

    def make(families: dict | None = None, name: str | None = None) -> happybase.Table:
        name = name or unique_table_name(request)
        connection.create_table(name, families or {"cf": {}})
        created.append(name)
        return connection.table(name)

    yield make
    existing = set(connection.tables())
    for name in created:
        if name.encode() in existing:
            connection.delete_table(name, disable=True)


@pytest.fixture
def table(make_table: MakeTable) -> happybase.Table:
    return make_table({"cf": {"max_versions": 3}, "other": {"max_versions": 1}})
