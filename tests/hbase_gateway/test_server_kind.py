"""A client tells the gateway from Apache HBase by asking it: ``getClusterId``.

The erasure report states ``completed`` for a major compaction only on the gateway, which
compacts before it answers, whether it runs embedded or as its own server; on Apache HBase
(``tests/conformance/test_server_kind_on_apache_hbase.py``) it states ``requested``.
"""

from __future__ import annotations

from thriftpy2.rpc import make_client

from profile_store.hbase.server_kind import cluster_id, is_gateway
from profile_store.hbase.settings import ThriftAddress
from profile_store.hbase_gateway.idl import GATEWAY_CLUSTER_ID_PREFIX, load_additions
from profile_store.hbase_gateway.process import EmbeddedGateway


def address_of(gateway: EmbeddedGateway) -> ThriftAddress:
    return ThriftAddress(gateway.host, gateway.port, gateway.transport, gateway.protocol)


def test_the_gateway_is_known_by_its_cluster_id_over_every_wire_mode(transport_gateway):
    address = address_of(transport_gateway)
    assert cluster_id(address).startswith(GATEWAY_CLUSTER_ID_PREFIX)
    assert is_gateway(address)


def test_each_store_has_its_own_cluster_id_kept_across_restarts(tmp_path):
    with EmbeddedGateway(tmp_path / "one") as one, EmbeddedGateway(tmp_path / "two") as two:
        first, other = cluster_id(address_of(one)), cluster_id(address_of(two))
    with EmbeddedGateway(tmp_path / "one") as again:
        assert cluster_id(address_of(again)) == first != other


def test_the_thrift_server_type_is_one_as_apache_hbase_answers_for_thrift_1(gateway):
    client = make_client(load_additions().HbaseAdditions, gateway.host, gateway.port)
    try:
        assert client.getThriftServerType() == load_additions().TThriftServerType.ONE
    finally:
        client.close()
