"""Which server a Thrift address is: this project's gateway, or Apache HBase.

What a caller may claim after ``majorCompact`` depends on it: the gateway compacts, and purges
its files, before it answers (embedded or run as its own server, ``profiles hbase-gateway``);
Apache HBase queues the compaction and answers at once. Whether the resource started the
gateway itself says nothing about a server at a configured host, so the server is asked:
``getClusterId`` (in Apache HBase's Thrift-1 IDL since 2.2) answers the cluster's UUID there,
and an id starting with ``GATEWAY_CLUSTER_ID_PREFIX`` on the gateway. Anything else (an older
HBase without the call, another server) counts as not the gateway: the claim that holds
everywhere is that a compaction was requested.
"""

from __future__ import annotations

from thriftpy2.protocol import TBinaryProtocolFactory, TCompactProtocolFactory
from thriftpy2.rpc import make_client
from thriftpy2.thrift import TApplicationException
from thriftpy2.transport import TBufferedTransportFactory, TFramedTransportFactory
from thriftpy2.transport.base import TTransportFactory

from profile_store.hbase.settings import ThriftAddress
from profile_store.hbase_gateway.idl import GATEWAY_CLUSTER_ID_PREFIX, load_additions

_TRANSPORTS: dict[str, type[TTransportFactory]] = {
    "buffered": TBufferedTransportFactory,
    "framed": TFramedTransportFactory,
}
_PROTOCOLS = {"binary": TBinaryProtocolFactory, "compact": TCompactProtocolFactory}


def cluster_id(address: ThriftAddress, timeout_ms: int = 30_000) -> str | None:
    """The server's ``getClusterId``, on a connection of its own; None if the server does not
    know the call. A server that cannot be reached raises (``TTransportException``)."""
    client = make_client(
        load_additions().HbaseAdditions,
        address.host,
        address.port,
        proto_factory=_PROTOCOLS[address.protocol](),
        trans_factory=_TRANSPORTS[address.transport](),
        timeout=timeout_ms,
    )
    try:
        return client.getClusterId()
    except TApplicationException:
        return None
    finally:
        client.close()


def is_gateway(address: ThriftAddress) -> bool:
    """Whether the server at ``address`` is this project's gateway (its compactions are done
    when the call returns) rather than Apache HBase (queued)."""
    found = cluster_id(address)
    return found is not None and found.startswith(GATEWAY_CLUSTER_ID_PREFIX)
