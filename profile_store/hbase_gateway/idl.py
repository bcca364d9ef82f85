"""The HBase Thrift-1 IDL, loaded from the copy that ships inside happybase, and the two calls
Apache HBase added to it since.

Serving the very file the client was generated from guarantees wire compatibility with
unmodified happybase; loading it under happybase's own module name (``Hbase_thrift``) shares one
set of struct classes between client and server when both live in one process.

happybase's copy predates ``getThriftServerType`` and ``getClusterId`` (Apache HBase 2.2 on).
The gateway serves them too (``served_service``), and answers ``getClusterId`` with an id that
starts with ``GATEWAY_CLUSTER_ID_PREFIX``: how a client tells this gateway, which compacts
before it answers, from Apache HBase, which answers its cluster's UUID (``hbase.server_kind``).
"""

from __future__ import annotations

import functools
import importlib.util
import io
import sys
from pathlib import Path
from types import ModuleType

import thriftpy2

MODULE_NAME = "Hbase_thrift"
ADDITIONS_MODULE_NAME = "HbaseAdditions_thrift"
GATEWAY_CLUSTER_ID_PREFIX = "adtech-profiles-hbase-gateway:"
"""``getClusterId`` of a gateway: this, then a digest of its data directory's path."""

_ADDITIONS = """
enum TThriftServerType {
  ONE = 1,
  TWO = 2
}

service HbaseAdditions {
  TThriftServerType getThriftServerType()
  string getClusterId()
}
"""
"""The calls of Apache HBase 2.6.1's ``Hbase.thrift`` that happybase's copy lacks, as that file
declares them."""


def idl_path() -> Path:
    spec = importlib.util.find_spec("happybase")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("happybase is not installed; its Hbase.thrift IDL is required")
    return Path(next(iter(spec.submodule_search_locations))) / "Hbase.thrift"


def load_idl() -> ModuleType:
    """Return the loaded ``Hbase_thrift`` module (service ``Hbase`` and its structs)."""
    module = sys.modules.get(MODULE_NAME)
    if module is None:
        module = thriftpy2.load(str(idl_path()), module_name=MODULE_NAME)
    return module


def load_additions() -> ModuleType:
    """The module of ``HbaseAdditions``: the calls happybase's IDL lacks."""
    module = sys.modules.get(ADDITIONS_MODULE_NAME)
    if module is None:
        module = thriftpy2.load_fp(io.StringIO(_ADDITIONS), ADDITIONS_MODULE_NAME)
    return module


@functools.cache
def served_methods() -> list[str]:
    """The names of the calls the gateway serves (``served_service``'s)."""
    return [*load_idl().Hbase.thrift_services, *load_additions().HbaseAdditions.thrift_services]


def served_service() -> type:
    """The service the gateway serves: happybase's ``Hbase`` and ``HbaseAdditions``' calls."""
    hbase, additions = load_idl().Hbase, load_additions().HbaseAdditions
    members: dict[str, object] = {"thrift_services": served_methods()}
    for api in additions.thrift_services:
        members[f"{api}_args"] = getattr(additions, f"{api}_args")
        members[f"{api}_result"] = getattr(additions, f"{api}_result")
    return type("Hbase", (hbase,), members)
