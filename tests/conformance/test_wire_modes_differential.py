"""Every transport and protocol HBase's Thrift server offers, on both servers.

Apache HBase's ``ThriftServer`` with ``-f`` (framed) and ``-c`` (compact) beside a gateway
started with the same settings; one sequence of calls answered alike over each.
"""

from __future__ import annotations

import pytest
from differential import Differential

from profile_store.hbase_gateway.process import EmbeddedGateway

WIRE_MODES = [("buffered", "compact"), ("framed", "binary"), ("framed", "compact")]


@pytest.mark.parametrize("transport,protocol", WIRE_MODES, ids=lambda v: v)
def test_a_sequence_of_calls_answers_alike_over_each_wire_mode(
    apache_hbase, tmp_path, transport: str, protocol: str
) -> None:
    port = apache_hbase.thrift_server(transport, protocol)
    with EmbeddedGateway(tmp_path, transport=transport, protocol=protocol) as gateway:
        pair = Differential(
            gateway.connection_kwargs(),
            apache_hbase.connection_kwargs(port, transport, protocol),
        )
        try:
            name = pair.create_table({"cf": {"max_versions": 2}})
            pair.same(lambda c: c.table(name).put(b"r1", {b"cf:a": b"\x00\xff", b"cf:b": b""}))
            pair.same(lambda c: c.table(name).put(b"r2", {b"cf:a": b"2"}, timestamp=7))
            pair.same(lambda c: c.table(name).counter_inc(b"r3", b"cf:n", 41))
            pair.same(lambda c: c.table(name).row(b"r1"))
            pair.same(lambda c: c.table(name).rows([b"r1", b"r2", b"r9"], include_timestamp=True))
            pair.same(lambda c: c.table(name).scan(filter=b"ValueFilter(=, 'binary:2')"))
            pair.same(lambda c: c.table(name).scan(reverse=True, batch_size=1))
            pair.same(lambda c: c.table(name).scan(filter=b"NoSuchFilter()"))
            pair.same(lambda c: c.table(b"missing_table").row(b"r1"))
            pair.same(lambda c: c.tables() and name in c.tables())
        finally:
            pair.close()
