"""The Thrift-1 ``Hbase`` service: every call of the IDL, with HBase's semantics.

Each method translates Thrift structs to store calls and back; errors are raised as
``GatewayError`` and turned into the IDL's exceptions by ``server.GatewayProcessor``. The
behaviour follows HBase's ``ThriftHBaseServiceHandler`` (HBase 2.x); where that server is
ambiguous or buggy (e.g. timestamped multi-gets ignoring the timestamp without columns) the
gateway implements the documented semantics instead.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import threading
from collections.abc import Sequence
from operator import attrgetter

from .errors import (
    GatewayError,
    GatewayIllegalArgument,
    GatewayInternalError,
    GatewayIOError,
    retries_exhausted,
    show_bytes,
)
from .idl import GATEWAY_CLUSTER_ID_PREFIX, load_additions, load_idl
from .major_compaction import major_compact
from .scanner import Scanner, ScannerRegistry, ScanSpec
from .schema import FOREVER, LATEST_TIMESTAMP, FamilyDescriptor, StoredCell, TableInfo
from .store import Store
from .thrift_structs import (
    BatchMutationLike,
    ColumnDescriptorLike,
    MutationLike,
    TAppendLike,
    TIncrementLike,
    TScanLike,
)
from .visible_cells import RowCells
from .wire import EncodedRows, encode_row

_IDL = load_idl()
TCell = _IDL.TCell
TColumn = _IDL.TColumn
TRowResult = _IDL.TRowResult
ColumnDescriptor = _IDL.ColumnDescriptor
TRegionInfo = _IDL.TRegionInfo
THRIFT_ONE = load_additions().TThriftServerType.ONE


_MUTATION_FIELDS = attrgetter("isDelete", "column", "value")


def _as_bytes(value: bytes | str) -> bytes:
    return value.encode() if isinstance(value, str) else value


class HbaseHandler:
    """Implements the ``Hbase`` service; thread-safe (one instance serves all connections)."""

    def __init__(
        self,
        store: Store,
        *,
        server_name: str | None = None,
        port: int = 0,
        encode_rows: bool = False,
    ) -> None:
        """``encode_rows``: scanners return rows already encoded for the binary protocol
        (``wire``), which the server then writes as they are."""
        self.store = store
        self._encode_rows = encode_rows
        self.scanners = ScannerRegistry()
        self._server_name = (server_name or socket.gethostname()).encode()
        self._port = port
        self._after_reply = threading.local()

    # -- result building -----------------------------------------------------------------------

    @staticmethod
    def _row_result(info: TableInfo, row: bytes, cells: list[StoredCell], sort: bool) -> object:
        # Positional arguments: half the cost of keywords on this hot path. The IDL order is
        # TRowResult(row, columns, sortedColumns), TColumn(columnName, cell),
        # TCell(value, timestamp).
        prefixes = info.column_prefixes
        if sort:
            return TRowResult(
                row,
                None,
                [TColumn(prefixes[c[1]] + c[2], TCell(c[4], c[3])) for c in cells],
            )
        return TRowResult(row, {prefixes[c[1]] + c[2]: TCell(c[4], c[3]) for c in cells})

    def _row_results(self, table: bytes, rows: list[RowCells], sort: bool = False) -> list[object]:
        """A get's rows, encoded as a scan's are over the binary protocol (one version per
        column: the same bytes as the objects, without building them)."""
        if not rows:
            return []
        info = self.store.table(table)
        if self._encode_rows and not sort:
            prefixes = info.column_prefixes
            return EncodedRows([encode_row(prefixes, row, cells) for row, cells in rows])
        return [self._row_result(info, row, cells, sort) for row, cells in rows]

    @staticmethod
    def _cells(cells: list[StoredCell]) -> list[object]:
        return [TCell(value=c[4], timestamp=c[3]) for c in cells]

    # -- admin ---------------------------------------------------------------------------------

    def enableTable(self, tableName: bytes) -> None:
        self.store.set_enabled(tableName, True)

    def disableTable(self, tableName: bytes) -> None:
        self.store.set_enabled(tableName, False)

    def isTableEnabled(self, tableName: bytes) -> bool:
        return self.store.table(tableName).enabled

    def compact(self, tableNameOrRegionName: bytes) -> None:
        self.store.compact(self._table_of(tableNameOrRegionName), major=False)

    def majorCompact(self, tableNameOrRegionName: bytes) -> None:
        major_compact(self.store, self._table_of(tableNameOrRegionName))

    def getThriftServerType(self) -> int:
        return THRIFT_ONE

    def getClusterId(self) -> str:
        """HBase answers its cluster's UUID; a gateway, its own mark and a digest of its store's
        path (one id per store): a client tells from it that compactions here are synchronous
        (``hbase.server_kind``)."""
        path = str(self.store.data_dir.resolve()).encode()
        return GATEWAY_CLUSTER_ID_PREFIX + hashlib.sha256(path).hexdigest()[:16]

    def _table_of(self, table_or_region: bytes) -> bytes:
        """Accept a table name or one of our region names (``table,,<id>.<hash>.``)."""
        if b"," in table_or_region:
            return table_or_region.split(b",", 1)[0]
        return table_or_region

    def getTableNames(self) -> list[bytes]:
        return self.store.table_names()

    def getColumnDescriptors(self, tableName: bytes) -> dict[bytes, object]:
        info = self.store.table(tableName)
        return {
            f.name + b":": ColumnDescriptor(
                name=f.name + b":",
                maxVersions=f.max_versions,
                compression=f.compression,
                inMemory=f.in_memory,
                bloomFilterType=f.bloom_filter_type,
                bloomFilterVectorSize=f.bloom_filter_vector_size,
                bloomFilterNbHashes=f.bloom_filter_nb_hashes,
                blockCacheEnabled=f.block_cache_enabled,
                timeToLive=f.time_to_live,
            )
            for f in info.families
        }

    def _region(self, info: TableInfo) -> object:
        encoded = hashlib.md5(b"%s,,%d" % (info.name, info.created_ms)).hexdigest().encode()
        return TRegionInfo(
            startKey=b"",
            endKey=b"",
            id=info.created_ms,
            name=b"%s,,%d.%s." % (info.name, info.created_ms, encoded),
            version=1,
            serverName=self._server_name,
            port=self._port,
        )

    def getTableRegions(self, tableName: bytes) -> list[object]:
        """One region spanning the table; an unknown table has none (as in HBase)."""
        try:
            info = self.store.table(tableName)
        except GatewayIOError:
            return []
        return [self._region(info)]

    def getRegionInfo(self, row: bytes) -> object:
        """Region of a ``hbase:meta`` search row ``table,key,...``."""
        try:
            return self._region(self.store.table(row.split(b",", 1)[0]))
        except GatewayIOError:
            raise GatewayIOError(
                f"IOException: Cannot find row in hbase:meta, row={show_bytes(row)}"
            ) from None

    def createTable(self, tableName: bytes, columnFamilies: Sequence[ColumnDescriptorLike]) -> None:
        families = []
        for cd in columnFamilies or ():
            if not cd.name:
                raise GatewayIllegalArgument("column name is empty")
            ttl = FOREVER if cd.timeToLive in (None, -1) else cd.timeToLive
            families.append(
                FamilyDescriptor(
                    name=_as_bytes(cd.name).split(b":", 1)[0],
                    max_versions=3 if cd.maxVersions is None else cd.maxVersions,
                    time_to_live=ttl,
                    compression=(cd.compression or "NONE").upper(),
                    in_memory=bool(cd.inMemory),
                    bloom_filter_type=(cd.bloomFilterType or "NONE").upper(),
                    bloom_filter_vector_size=cd.bloomFilterVectorSize or 0,
                    bloom_filter_nb_hashes=cd.bloomFilterNbHashes or 0,
                    block_cache_enabled=bool(cd.blockCacheEnabled),
                )
            )
        self.store.create_table(tableName, families)

    def deleteTable(self, tableName: bytes) -> None:
        if tableName not in self.store.table_names():  # HBase's handler checks tableExists first
            raise GatewayIOError("IOException: table does not exist")
        self.store.delete_table(tableName)

    # -- single-cell reads ---------------------------------------------------------------------

    def get(self, tableName: bytes, row: bytes, column: bytes, attributes: object) -> list[object]:
        return self.getVer(tableName, row, column, 1, attributes)

    def getVer(
        self, tableName: bytes, row: bytes, column: bytes, numVersions: int, attributes: object
    ) -> list[object]:
        return self.getVerTs(tableName, row, column, LATEST_TIMESTAMP, numVersions, attributes)

    def getVerTs(
        self,
        tableName: bytes,
        row: bytes,
        column: bytes,
        timestamp: int,
        numVersions: int,
        attributes: object,
    ) -> list[object]:
        if numVersions is None or numVersions < 1:
            raise GatewayIOError(f"IOException: versions must be positive, got {numVersions}")
        found = self.store.get_rows(tableName, [row], [column], timestamp, numVersions)
        return self._cells(found[0][1]) if found else []

    # -- row reads -----------------------------------------------------------------------------

    def getRow(self, tableName: bytes, row: bytes, attributes: object) -> list[object]:
        return self.getRowWithColumnsTs(tableName, row, None, LATEST_TIMESTAMP, attributes)

    def getRowWithColumns(
        self, tableName: bytes, row: bytes, columns: list[bytes] | None, attributes: object
    ) -> list[object]:
        return self.getRowWithColumnsTs(tableName, row, columns, LATEST_TIMESTAMP, attributes)

    def getRowTs(
        self, tableName: bytes, row: bytes, timestamp: int, attributes: object
    ) -> list[object]:
        return self.getRowWithColumnsTs(tableName, row, None, timestamp, attributes)

    def getRowWithColumnsTs(
        self,
        tableName: bytes,
        row: bytes,
        columns: list[bytes] | None,
        timestamp: int,
        attributes: object,
    ) -> list[object]:
        return self._row_results(
            tableName, self.store.get_rows(tableName, [row], columns, timestamp)
        )

    def getRows(self, tableName: bytes, rows: list[bytes], attributes: object) -> list[object]:
        return self.getRowsWithColumnsTs(tableName, rows, None, LATEST_TIMESTAMP, attributes)

    def getRowsWithColumns(
        self, tableName: bytes, rows: list[bytes], columns: list[bytes] | None, attributes: object
    ) -> list[object]:
        return self.getRowsWithColumnsTs(tableName, rows, columns, LATEST_TIMESTAMP, attributes)

    def getRowsTs(
        self, tableName: bytes, rows: list[bytes], timestamp: int, attributes: object
    ) -> list[object]:
        return self.getRowsWithColumnsTs(tableName, rows, None, timestamp, attributes)

    def getRowsWithColumnsTs(
        self,
        tableName: bytes,
        rows: list[bytes],
        columns: list[bytes] | None,
        timestamp: int,
        attributes: object,
    ) -> list[object]:
        if not rows:
            self.store.readable(tableName)
            return []
        if not self.store.table(tableName).enabled:
            # HBase reads a list of rows with ``Table.get(List)``, a client batch: on a disabled
            # table it fails as one (after about 150 s of retries; the gateway answers at once).
            raise retries_exhausted(
                len(rows), f"TableNotEnabledException: {show_bytes(tableName)} is disabled"
            )
        return self._row_results(
            tableName, self.store.get_rows(tableName, rows, columns, timestamp)
        )

    def getRowOrBefore(self, tableName: bytes, row: bytes, family: bytes) -> list[object]:
        return self._cells(self.store.row_or_before(tableName, row, family.split(b":", 1)[0]))

    # -- writes --------------------------------------------------------------------------------

    @staticmethod
    def _mutations(
        mutations: Sequence[MutationLike] | None,
    ) -> list[tuple[bool, bytes, bytes | None]]:
        # ``attrgetter`` builds the tuples in C: a bulk load sends millions of mutations. An
        # absent ``isDelete`` (None) reads as a put, as the store tests truthiness.
        return list(map(_MUTATION_FIELDS, mutations or ()))

    def mutateRow(
        self, tableName: bytes, row: bytes, mutations: list[MutationLike], attributes: object
    ) -> None:
        self.mutateRowTs(tableName, row, mutations, LATEST_TIMESTAMP, attributes)

    def mutateRowTs(
        self,
        tableName: bytes,
        row: bytes,
        mutations: list[MutationLike],
        timestamp: int,
        attributes: object,
    ) -> None:
        """Single-row mutation: HBase applies its deletes before its puts (unlike mutateRows)."""
        self.store.mutate_rows(
            tableName, [(row, self._mutations(mutations))], timestamp, deletes_first=True
        )

    def mutateRows(
        self, tableName: bytes, rowBatches: list[BatchMutationLike], attributes: object
    ) -> None:
        self.mutateRowsTs(tableName, rowBatches, LATEST_TIMESTAMP, attributes)

    def mutateRowsTs(
        self,
        tableName: bytes,
        rowBatches: list[BatchMutationLike],
        timestamp: int,
        attributes: object,
    ) -> None:
        self.store.mutate_batch(
            tableName,
            [(b.row, self._mutations(b.mutations)) for b in rowBatches or ()],
            timestamp,
        )

    def atomicIncrement(self, tableName: bytes, row: bytes, column: bytes, value: int) -> int:
        return self.store.increment([(tableName, row, column, value)])[0]

    def increment(self, increment: TIncrementLike) -> None:
        self.incrementRows([increment])

    def incrementRows(self, increments: list[TIncrementLike]) -> None:
        checked: list[tuple[bytes, bytes, bytes, int]] = []
        for inc in increments or ():
            if not inc.table or not inc.row:
                raise GatewayIOError("Must supply a table and a row key; can't increment")
            checked.append((inc.table, inc.row, inc.column, inc.ammount or 0))
        self.store.increment(checked)

    def deleteAll(self, tableName: bytes, row: bytes, column: bytes, attributes: object) -> None:
        self.deleteAllTs(tableName, row, column, LATEST_TIMESTAMP, attributes)

    def deleteAllTs(
        self, tableName: bytes, row: bytes, column: bytes, timestamp: int, attributes: object
    ) -> None:
        self.store.mutate_rows(tableName, [(row, [(True, column, None)])], timestamp)

    def deleteAllRow(self, tableName: bytes, row: bytes, attributes: object) -> None:
        self.store.delete_row(tableName, row)

    def deleteAllRowTs(
        self, tableName: bytes, row: bytes, timestamp: int, attributes: object
    ) -> None:
        self.store.delete_row(tableName, row, timestamp)

    def append(self, append: TAppendLike) -> list[object]:
        if not append.table or not append.row:
            raise GatewayIOError("Must supply a table and a row key; can't append")
        columns, values = append.columns or [], append.values or []
        if len(columns) != len(values):
            raise GatewayIOError("IOException: TAppend needs as many values as columns")
        return self._cells(
            self.store.append(append.table, append.row, list(zip(columns, values, strict=True)))
        )

    def checkAndPut(
        self,
        tableName: bytes,
        row: bytes,
        column: bytes,
        value: bytes | None,
        mput: MutationLike | None,
        attributes: object,
    ) -> bool:
        if mput is None:  # HBase dereferences it: a NullPointerException in its handler
            raise GatewayInternalError("NullPointerException")
        # HBase builds a Put from the mutation whatever its isDelete says.
        return self.store.check_and_put(
            tableName, row, column, value, mput.column, mput.value or b""
        )

    # -- scanners ------------------------------------------------------------------------------

    def _open(self, tableName: bytes, spec: ScanSpec) -> int:
        info = self.store.readable(tableName)
        sort = spec.sort_columns
        if self._encode_rows and not sort:
            return self.scanners.add(Scanner(self.store, tableName, spec, encoded=True))
        row_result = self._row_result

        def build(row: bytes, cells: list[StoredCell]) -> object:
            return row_result(info, row, cells, sort)

        return self.scanners.add(Scanner(self.store, tableName, spec, build))

    def scannerOpenWithScan(self, tableName: bytes, scan: TScanLike, attributes: object) -> int:
        return self._open(
            tableName,
            ScanSpec(
                start_row=scan.startRow,
                stop_row=scan.stopRow,
                columns=scan.columns,
                before_ts=scan.timestamp,
                caching=scan.caching,
                batch_size=scan.batchSize,
                filter_string=scan.filterString,
                sort_columns=bool(scan.sortColumns),
                reversed=bool(scan.reversed),
            ),
        )

    def scannerOpen(
        self, tableName: bytes, startRow: bytes, columns: list[bytes] | None, attributes: object
    ) -> int:
        return self._open(tableName, ScanSpec(start_row=startRow, columns=columns))

    def scannerOpenWithStop(
        self,
        tableName: bytes,
        startRow: bytes,
        stopRow: bytes,
        columns: list[bytes] | None,
        attributes: object,
    ) -> int:
        return self._open(
            tableName, ScanSpec(start_row=startRow, stop_row=stopRow, columns=columns)
        )

    def scannerOpenWithPrefix(
        self,
        tableName: bytes,
        startAndPrefix: bytes,
        columns: list[bytes] | None,
        attributes: object,
    ) -> int:
        return self._open(
            tableName,
            ScanSpec(
                start_row=startAndPrefix,
                stop_row=_prefix_end(startAndPrefix),
                columns=columns,
            ),
        )

    def scannerOpenTs(
        self,
        tableName: bytes,
        startRow: bytes,
        columns: list[bytes] | None,
        timestamp: int,
        attributes: object,
    ) -> int:
        return self._open(
            tableName, ScanSpec(start_row=startRow, columns=columns, before_ts=timestamp)
        )

    def scannerOpenWithStopTs(
        self,
        tableName: bytes,
        startRow: bytes,
        stopRow: bytes,
        columns: list[bytes] | None,
        timestamp: int,
        attributes: object,
    ) -> int:
        return self._open(
            tableName,
            ScanSpec(start_row=startRow, stop_row=stopRow, columns=columns, before_ts=timestamp),
        )

    def scannerGetList(self, id: int, nbRows: int) -> list[object]:
        scanner = self.scanners.get(id)
        count = max(nbRows or 0, 1)
        results = scanner.next_rows(count)
        if len(results) == count:  # a client asking for a full batch will likely ask again
            self._after_reply.task = lambda: scanner.prefetch(count)
        return EncodedRows(results) if scanner.encoded else results

    def run_after_reply(self) -> None:
        """Run work deferred until the reply of this thread's last call went out (prefetch)."""
        task = getattr(self._after_reply, "task", None)
        if task is not None:
            self._after_reply.task = None
            with contextlib.suppress(GatewayError):  # the next call reports it, if it recurs
                task()

    def scannerGet(self, id: int) -> list[object]:
        return self.scannerGetList(id, 1)

    def scannerClose(self, id: int) -> None:
        self.scanners.close(id)


def _prefix_end(prefix: bytes) -> bytes | None:
    """The first key after every key starting with ``prefix`` (None: no upper bound)."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes([trimmed[-1] + 1])
