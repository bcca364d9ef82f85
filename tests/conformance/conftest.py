"""The differential suite: the same happybase calls against the gateway and Apache HBase.

* ``apache_hbase``: one standalone Apache HBase (``profile_store.launchers.apache_hbase``) per
  session; the first session on a machine resolves its jars from Maven Central.
* ``conformance_gateway``: one embedded gateway per session, deferring every batch.
* ``pair``: a ``Differential`` over fresh connections to both servers.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from differential import Differential

from profile_store.hbase_gateway.process import EmbeddedGateway
from profile_store.launchers.apache_hbase import ApacheHBase, temporary_hbase


@pytest.fixture(scope="session")
def apache_hbase() -> Iterator[ApacheHBase]:
    with temporary_hbase() as hbase:
        yield hbase


@pytest.fixture(scope="session")
def conformance_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedGateway]:
    """Every ``mutateRows`` goes through the pending log here (``--defer-batches-from 1``), so
    each differential batch also checks that a deferred batch is seen exactly as HBase's."""
    with EmbeddedGateway(
        tmp_path_factory.mktemp("conformance-gateway"),
        server_args=("--defer-batches-from", "1"),
    ) as gateway:
        yield gateway


@pytest.fixture
def pair(conformance_gateway: EmbeddedGateway, apache_hbase: ApacheHBase) -> Iterator[Differential]:
    differential = Differential(
        conformance_gateway.connection_kwargs(), apache_hbase.connection_kwargs()
    )
    yield differential
    differential.close()
