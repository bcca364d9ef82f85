"""Fixtures of the profile read tests, over the gateway holding ``known_profiles``
(``profile_gateway`` in ``tests/conftest.py``).

Round trips are counted by ``counted_reader``: it swaps the happybase connection's Thrift client
for a proxy that records each call. Every call of HBase's Thrift-1 IDL is one request and one
reply on the socket (the IDL has no one-way calls), so the recorded calls are the round trips.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator

import happybase
import pytest

from profile_store.hbase.pool import hbase_pool, table_opener
from profile_store.hbase.settings import HBaseSettings
from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.profiles.reads import ProfileReader
from profile_store.profiles.table import PROFILE_TABLE, ensure_table


@pytest.fixture(scope="module")
def reader(profile_settings: HBaseSettings) -> Iterator[ProfileReader]:
    """A reader through the same pool the CLI and the service use."""
    with hbase_pool(profile_settings) as pool:
        yield ProfileReader(table_opener(pool, PROFILE_TABLE))


class CountingClient:
    """happybase's Thrift client, recording the name of every call (one call, one round trip)."""

    def __init__(self, client: object) -> None:
        self._client = client
        self.calls: list[str] = []

    def __getattr__(self, name: str) -> Callable:
        method = getattr(self._client, name)

        def call(*args, **kwargs):
            self.calls.append(name)
            return method(*args, **kwargs)

        return call


@pytest.fixture
def counted_reader(profile_gateway: EmbeddedGateway) -> Iterator[tuple[ProfileReader, list[str]]]:
    """A reader over one connection whose round trips are recorded in the returned list."""
    connection = happybase.Connection(**profile_gateway.connection_kwargs())
    client = CountingClient(connection.client)
    connection.client = client

    @contextlib.contextmanager
    def open_table() -> Iterator[happybase.Table]:
        yield connection.table(PROFILE_TABLE)

    try:
        yield ProfileReader(open_table), client.calls
    finally:
        connection.close()


@pytest.fixture
def scratch_table(profile_gateway: EmbeddedGateway, request) -> Iterator[happybase.Table]:
    """A fresh, empty profiles-shaped table of its own, for tests that write or delete."""
    connection = happybase.Connection(**profile_gateway.connection_kwargs())
    name = "scratch_" + hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:12]
    try:
        ensure_table(connection, name)
        yield connection.table(name)
    finally:
        connection.delete_table(name, disable=True)
        connection.close()
