"""The Dagster HBase resource: embedded gateway by default, an external server when configured."""

# No "from __future__ import annotations": Dagster inspects the asset's real annotations.

from pathlib import Path

import happybase
import pytest
from dagster import AssetExecutionContext, asset, materialize
from thriftpy2.transport import TTransportException

from profile_store.hbase_gateway.process import EmbeddedGateway
from resources.hbase import HBaseResource


def test_from_env_reads_the_production_settings() -> None:
    resource = HBaseResource.from_env(
        {
            "HBASE_THRIFT_HOST": "hbase-thrift.internal",
            "HBASE_THRIFT_PORT": "9095",
            "HBASE_THRIFT_TRANSPORT": "framed",
            "HBASE_THRIFT_PROTOCOL": "compact",
            "HBASE_TABLE_PREFIX": "prod",
        }
    )
    assert (resource.host, resource.port) == ("hbase-thrift.internal", 9095)
    assert (resource.transport, resource.protocol, resource.table_prefix) == (
        "framed",
        "compact",
        "prod",
    )
    assert not resource.embedded


def test_from_env_without_variables_is_embedded() -> None:
    resource = HBaseResource.from_env({}, data_dir="somewhere")
    assert resource.embedded
    assert resource.data_dir == "somewhere"


def test_the_embedded_gateways_worker_count_is_configurable(tmp_path: Path) -> None:
    assert HBaseResource.from_env({}).gateway_workers is None  # the gateway's own default
    from_env = HBaseResource.from_env({"PROFILES_HBASE_GATEWAY_WORKERS": "3"})
    assert from_env.settings().gateway_workers == 3
    with pytest.raises(ValueError, match="gateway_workers"):
        HBaseResource(data_dir=str(tmp_path), gateway_workers=0).pool()
    resource = HBaseResource(data_dir=str(tmp_path), gateway_workers=1)
    try:
        with resource.connection() as connection:
            assert connection.tables() == []
        assert "workers=1)" in (tmp_path / "gateway.log").read_text()
    finally:
        resource.close()


def test_invalid_transport_is_rejected_before_connecting(tmp_path: Path) -> None:
    resource = HBaseResource(data_dir=str(tmp_path), transport="http")
    with pytest.raises(ValueError, match="transport"):
        resource.pool()


def test_embedded_gateway_starts_on_first_use_and_stops_on_close(tmp_path: Path) -> None:
    resource = HBaseResource(data_dir=str(tmp_path), pool_size=2)
    with resource.connection() as connection:
        connection.create_table("t", {"cf": {}})
        connection.table("t").put(b"r", {b"cf:a": b"1"})
    host, port = resource.address
    resource.close()
    with pytest.raises(TTransportException):
        happybase.Connection(host=host, port=port)


def test_embedded_data_persists_across_resources(tmp_path: Path) -> None:
    first = HBaseResource(data_dir=str(tmp_path))
    with first.connection() as connection:
        connection.create_table("t", {"cf": {}})
        connection.table("t").put(b"r", {b"cf:a": b"kept"})
    first.close()
    second = HBaseResource(data_dir=str(tmp_path))
    with second.connection() as connection:
        assert connection.table("t").row(b"r") == {b"cf:a": b"kept"}
    second.close()


def test_configured_host_uses_that_server_and_leaves_it_running(tmp_path: Path) -> None:
    with EmbeddedGateway(tmp_path, transport="framed", protocol="compact") as external:
        resource = HBaseResource(
            host=external.host,
            port=external.port,
            transport="framed",
            protocol="compact",
            table_prefix="app",
        )
        with resource.connection() as connection:
            connection.create_table("t", {"cf": {}})
        resource.close()
        plain = happybase.Connection(**external.connection_kwargs())
        assert plain.tables() == [b"app_t"]
        plain.close()


def test_resource_in_a_dagster_run_writes_and_stops_its_gateway(tmp_path: Path) -> None:
    @asset
    def profile_rows(context: AssetExecutionContext, hbase: HBaseResource) -> None:
        with hbase.connection() as connection:
            connection.create_table("profiles", {"s": {}})
            connection.table("profiles").put(b"p1", {b"s:type": b"device"})
            context.add_output_metadata({"port": hbase.address[1]})

    result = materialize([profile_rows], resources={"hbase": HBaseResource(data_dir=str(tmp_path))})
    assert result.success
    port = result.asset_materializations_for_node("profile_rows")[0].metadata["port"].value
    with pytest.raises(TTransportException):
        happybase.Connection(host="127.0.0.1", port=port)
    with EmbeddedGateway(tmp_path) as gateway:
        connection = happybase.Connection(**gateway.connection_kwargs())
        assert connection.table("profiles").row(b"p1") == {b"s:type": b"device"}
        connection.close()
