"""The Dagster HBase resource is the library's HBase settings, configurable in Dagster."""

from __future__ import annotations

from profile_store.hbase.settings import HBaseSettings
from resources.hbase import HBaseResource

ENV = {
    "HBASE_THRIFT_HOST": "hbase.internal",
    "HBASE_THRIFT_PORT": "9091",
    "HBASE_THRIFT_TRANSPORT": "framed",
    "HBASE_THRIFT_PROTOCOL": "compact",
    "HBASE_TABLE_PREFIX": "prod",
    "PROFILES_HBASE_DATA_DIR": "/var/hbase",
    "PROFILES_HBASE_GATEWAY_WORKERS": "2",
}


def test_the_resource_from_the_environment_holds_the_libraries_settings():
    resource = HBaseResource.from_env(ENV, pool_size=8)
    assert resource.settings() == HBaseSettings.from_env(ENV, pool_size=8)
    assert (resource.host, resource.port, resource.pool_size) == ("hbase.internal", 9091, 8)


def test_without_a_host_the_resource_is_embedded():
    assert HBaseResource.from_env({}).embedded
    assert HBaseResource.from_env({}).settings() == HBaseSettings()
