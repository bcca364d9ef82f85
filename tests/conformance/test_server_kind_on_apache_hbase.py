"""``getClusterId`` tells the two servers apart: Apache HBase answers its cluster's UUID, the
gateway its own mark, so a client claims a finished major compaction only on the gateway."""

from __future__ import annotations

import uuid

from profile_store.hbase.server_kind import cluster_id, is_gateway
from profile_store.hbase.settings import ThriftAddress


def test_apache_hbase_answers_a_uuid_and_is_not_taken_for_the_gateway(apache_hbase):
    address = ThriftAddress("127.0.0.1", apache_hbase.port)
    assert uuid.UUID(cluster_id(address))  # a UUID, nothing of the gateway's mark
    assert not is_gateway(address)


def test_the_conformance_gateway_is_taken_for_the_gateway(conformance_gateway):
    assert is_gateway(ThriftAddress(conformance_gateway.host, conformance_gateway.port))
