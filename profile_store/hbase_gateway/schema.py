"""HBase's data model as the gateway stores it: tables, column families, column names, cells.

A stored cell is the tuple ``(row, family_id, qualifier, timestamp, value)``. Families are fixed
when a table is created, so each one gets a small integer id in byte order of its name: ordering
cells by ``(row, family_id, qualifier, timestamp DESC)`` is then exactly HBase's cell order while
the store keeps one integer instead of the family name in every cell.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .errors import GatewayIllegalArgument, GatewayInternalError, no_such_family, show_bytes

LATEST_TIMESTAMP = 2**63 - 1  # HConstants.LATEST_TIMESTAMP: "use the server's clock"
FOREVER = 2**31 - 1  # HConstants.FOREVER: the TTL HBase reports for "no TTL"
MAX_ROW_LENGTH = 32767  # HConstants.MAX_ROW_LENGTH
_BEFORE_LAST = f" AND ts < {LATEST_TIMESTAMP}"


def now_ms() -> int:
    """The server clock cells are stamped with, and their TTLs measured by (wall time, ms)."""
    return time.time_ns() // 1_000_000


StoredCell = tuple[bytes, int, bytes, int, bytes]
"""``(row, family_id, qualifier, timestamp, value)``."""

_TABLE_NAME = re.compile(rb"[A-Za-z0-9_][A-Za-z0-9_.\-]{0,254}")
_COMPRESSIONS = frozenset({"NONE", "GZ", "LZO", "SNAPPY", "LZ4", "BZIP2", "ZSTD", "LZMA"})
_BLOOM_TYPES = frozenset({"NONE", "ROW", "ROWCOL", "ROWPREFIX_FIXED_LENGTH"})


def parse_column(column: bytes) -> tuple[bytes, bytes | None]:
    """Split ``family:qualifier`` on the first colon; ``family`` alone gives qualifier None.

    ``b"cf"`` names the whole family while ``b"cf:"`` names the empty qualifier, as in HBase's
    ``CellUtil.parseColumn``; qualifiers may themselves contain colons.
    """
    i = column.find(b":")
    if i < 0:
        return column, None
    return column[:i], column[i + 1 :]


def validate_table_name(name: bytes) -> None:
    if not _TABLE_NAME.fullmatch(name):
        raise GatewayIllegalArgument(
            f"IllegalArgumentException: illegal table name {show_bytes(name)!r}: use 1-255 of "
            "[A-Za-z0-9_.-], not starting with '.' or '-'"
        )


def check_row_key(row: bytes) -> None:
    if not row:
        raise GatewayIllegalArgument("IllegalArgumentException: Row length is 0")
    if len(row) > MAX_ROW_LENGTH:
        raise GatewayIllegalArgument(
            f"IllegalArgumentException: Row length {len(row)} is > {MAX_ROW_LENGTH}"
        )


def check_client_row_key(row: bytes) -> None:
    """A row key HBase's client objects (``Put``, ``Get``) refuse in their constructor, which
    its Thrift handler calls outside its ``catch``: an internal error, not IllegalArgument."""
    try:
        check_row_key(row)
    except GatewayIllegalArgument as exc:
        raise GatewayInternalError(exc.message) from exc


@dataclass(frozen=True, slots=True)
class FamilyDescriptor:
    """One column family's settings, mirroring Thrift's ``ColumnDescriptor``."""

    name: bytes
    max_versions: int = 3
    time_to_live: int = FOREVER  # seconds
    compression: str = "NONE"
    in_memory: bool = False
    bloom_filter_type: str = "NONE"
    bloom_filter_vector_size: int = 0
    bloom_filter_nb_hashes: int = 0
    block_cache_enabled: bool = False

    def validate(self) -> None:
        shown = show_bytes(self.name)
        if not self.name:
            raise GatewayIllegalArgument("IllegalArgumentException: column family name is empty")
        if self.name.startswith(b"."):
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: family {shown!r} must not start with '.'"
            )
        if self.max_versions < 1:
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: family {shown!r}: maxVersions must be positive, "
                f"got {self.max_versions}"
            )
        if self.time_to_live < 1:
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: family {shown!r}: timeToLive must be positive "
                f"seconds or -1 for forever, got {self.time_to_live}"
            )
        if self.compression not in _COMPRESSIONS:
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: family {shown!r}: unknown compression "
                f"{self.compression!r} (one of {', '.join(sorted(_COMPRESSIONS))})"
            )
        if self.bloom_filter_type not in _BLOOM_TYPES:
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: family {shown!r}: unknown bloomFilterType "
                f"{self.bloom_filter_type!r} (one of {', '.join(sorted(_BLOOM_TYPES))})"
            )

    @property
    def ttl_ms(self) -> int | None:
        """TTL in milliseconds, or None when cells never expire."""
        return None if self.time_to_live >= FOREVER else self.time_to_live * 1000


@dataclass(frozen=True)
class ColumnSelection:
    """Which cells of a row a read wants: whole families and/or single qualifiers.

    A read naming qualifiers passes over a cell at Long.MAX_VALUE (which only an increment or
    append of a cell at Long.MAX_VALUE - 1 writes), as HBase's: its explicit-column tracker
    starts each column with Long.MAX_VALUE as "the previous version's timestamp" and skips a
    cell that repeats it. Reads of whole rows or families return that cell.
    """

    families: frozenset[int]
    qualifiers: tuple[tuple[int, tuple[bytes, ...]], ...]

    def sql(self) -> tuple[str, list[object]]:
        """A ``WHERE`` fragment (starting with `` AND``) and its parameters."""
        terms: list[str] = []
        params: list[object] = []
        if self.families:
            terms.append(f"fam IN ({','.join(str(f) for f in sorted(self.families))})")
        for fam, quals in self.qualifiers:
            if len(quals) == 1:
                terms.append(f"(fam = {fam} AND qual = ?{_BEFORE_LAST})")
            else:
                terms.append(
                    f"(fam = {fam} AND qual IN ({','.join('?' * len(quals))}){_BEFORE_LAST})"
                )
            params.extend(quals)
        if len(terms) == 1:
            return f" AND {terms[0]}", params
        return f" AND ({' OR '.join(terms)})", params

    def family_ids(self) -> frozenset[int]:
        return self.families | {fam for fam, _ in self.qualifiers}


@dataclass(frozen=True)
class TableInfo:
    """A table's catalog entry; ``families`` are sorted by name and their index is the id."""

    name: bytes
    table_id: int
    enabled: bool
    created_ms: int
    families: tuple[FamilyDescriptor, ...]
    family_index: dict[bytes, int] = field(init=False, repr=False, compare=False)
    column_prefixes: tuple[bytes, ...] = field(init=False, repr=False, compare=False)
    max_versions: tuple[int, ...] = field(init=False, repr=False, compare=False)
    has_ttl: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        names = [f.name for f in self.families]
        if names != sorted(names):
            raise ValueError("families must be sorted by name")
        object.__setattr__(self, "family_index", {name: i for i, name in enumerate(names)})
        object.__setattr__(self, "column_prefixes", tuple(name + b":" for name in names))
        object.__setattr__(self, "max_versions", tuple(f.max_versions for f in self.families))
        object.__setattr__(self, "has_ttl", any(f.ttl_ms is not None for f in self.families))

    @property
    def cells_table(self) -> str:
        return f"cells_{self.table_id}"

    @property
    def markers_table(self) -> str:
        return f"markers_{self.table_id}"

    def family_id(self, family: bytes) -> int:
        fam = self.family_index.get(family)
        if fam is None:
            raise no_such_family(self.name, family)
        return fam

    def select(self, columns: Sequence[bytes] | None) -> ColumnSelection | None:
        """Resolve Thrift column names; None (or empty) means every column of the row.

        In order, as HBase's handlers add them to a ``Get`` or ``Scan``: a bare family asks for
        the whole family, a qualifier after it narrows the family to the qualifiers named.
        """
        if not columns:
            return None
        families: set[int] = set()
        qualifiers: dict[int, set[bytes]] = {}
        for column in columns:
            family, qualifier = parse_column(column)
            fam = self.family_id(family)
            if qualifier is None:
                families.add(fam)
                qualifiers.pop(fam, None)
            else:
                families.discard(fam)
                qualifiers.setdefault(fam, set()).add(qualifier)
        return ColumnSelection(
            families=frozenset(families),
            qualifiers=tuple(
                (fam, tuple(sorted(quals))) for fam, quals in sorted(qualifiers.items())
            ),
        )

    def ttl_floors(self, now_ms: int) -> tuple[int | None, ...] | None:
        """Per family, the oldest timestamp still alive at ``now_ms`` (None: no TTL at all)."""
        if not self.has_ttl:
            return None
        return tuple(None if f.ttl_ms is None else now_ms - f.ttl_ms for f in self.families)

    def version_limits(self, versions: int) -> tuple[int, ...]:
        return tuple(min(versions, mv) for mv in self.max_versions)


def sorted_families(families: Iterable[FamilyDescriptor]) -> tuple[FamilyDescriptor, ...]:
    """Validate and order a createTable family list; duplicates are an error as in HBase."""
    seen: dict[bytes, FamilyDescriptor] = {}
    for family in families:
        family.validate()
        if family.name in seen:
            raise GatewayIllegalArgument(
                f"IllegalArgumentException: Family {show_bytes(family.name)!r} already exists "
                "so cannot be added"
            )
        seen[family.name] = family
    return tuple(seen[name] for name in sorted(seen))
