"""The Thrift-1 structs the handler reads, as the IDL declares them (``Hbase.thrift``).

thriftpy2 builds the struct classes when it loads the IDL (``idl.load_idl``), so they have no
static type; these Protocols state the fields the handler reads. Every field of a Thrift struct
is optional on the wire: an absent one arrives as None.
"""

from __future__ import annotations

from typing import Protocol


class ColumnDescriptorLike(Protocol):
    name: bytes | str | None
    maxVersions: int | None
    compression: str | None
    inMemory: bool | None
    bloomFilterType: str | None
    bloomFilterVectorSize: int | None
    bloomFilterNbHashes: int | None
    blockCacheEnabled: bool | None
    timeToLive: int | None


class MutationLike(Protocol):
    isDelete: bool | None
    column: bytes
    value: bytes | None


class BatchMutationLike(Protocol):
    row: bytes
    mutations: list[MutationLike] | None


class TIncrementLike(Protocol):
    table: bytes | None
    row: bytes | None
    column: bytes
    ammount: int | None  # sic: the IDL's spelling


class TAppendLike(Protocol):
    table: bytes | None
    row: bytes | None
    columns: list[bytes] | None
    values: list[bytes] | None


class TScanLike(Protocol):
    startRow: bytes | None
    stopRow: bytes | None
    timestamp: int | None
    columns: list[bytes] | None
    caching: int | None
    filterString: bytes | None
    batchSize: int | None
    sortColumns: bool | None
    reversed: bool | None
