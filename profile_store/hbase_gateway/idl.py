"""The HBase Thrift-1 IDL, loaded from the copy that ships inside happybase.

Serving the very file the client was generated from guarantees wire compatibility with
unmodified happybase; loading it under happybase's own module name (``Hbase_thrift``) shares one
set of struct classes between client and server when both live in one process.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import thriftpy2

MODULE_NAME = "Hbase_thrift"


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
