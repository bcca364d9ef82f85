"""A bulk load's batch of Arrow cells, adopted byte for byte by the store."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pyarrow as pa
import pytest

from profile_store.hbase_gateway import arrow_cells
from profile_store.hbase_gateway.bulk_load import RowReplacement, load_replacing_rows
from profile_store.hbase_gateway.errors import GatewayIllegalArgument, GatewayIOError
from profile_store.hbase_gateway.schema import FamilyDescriptor
from profile_store.hbase_gateway.store import Store

# More than ten families: a family's id takes two digits.
FAMILIES = [f"f{i}" for i in range(12)]


@pytest.fixture
def store(tmp_path: Path):
    opened = Store(tmp_path)
    opened.create_table(b"t", [FamilyDescriptor(name.encode()) for name in FAMILIES])
    yield opened
    opened.close()


def batch(cells: list[tuple[bytes, str, bytes, bytes | None]]) -> pa.Table:
    rows, families, qualifiers, values = zip(*cells, strict=True)
    return pa.table(
        {
            "row": pa.array(rows, pa.binary()),
            "family": pa.array(families, pa.string()),
            "qualifier": pa.array(qualifiers, pa.binary()),
            "value": pa.array(values, pa.binary()),
        }
    )


def stored(store: Store) -> list[tuple[bytes, str, bytes, bytes, int]]:
    info = store.table(b"t")
    names = {info.family_id(name.encode()): name for name in FAMILIES}
    with sqlite3.connect(store.path) as conn:
        cells = conn.execute(
            f"SELECT row, fam, qual, value, ts, typeof(value) FROM {info.cells_table}"
        ).fetchall()
    assert {kind for *_, kind in cells} <= {"blob"}
    return sorted((row, names[fam], qual, value, ts) for row, fam, qual, value, ts, _ in cells)


def load(store: Store, cells: pa.Table, timestamp: int = 5):
    return load_replacing_rows(store, b"t", [cells], RowReplacement(), timestamp)


def test_every_cell_is_stored_byte_for_byte(store: Store) -> None:
    cells = [
        (b"r1", "f0", b"a", b"plain"),
        (b"r1", "f11", b"\x00\xff", b"\x00\x01\xfe\xff"),  # not UTF-8, NUL bytes
        (b"r\xc3\xa9", "f7", "é".encode(), b""),  # an empty value stays an empty blob
        (b"r2", "f10", b"q" * 300, b"v" * 100_000),
    ]
    load(store, batch(cells))
    assert stored(store) == sorted((*cell, 5) for cell in cells)


def test_a_cell_repeated_in_a_batch_keeps_its_last_value(store: Store) -> None:
    load(store, batch([(b"r", "f1", b"q", b"first"), (b"r", "f1", b"q", b"last")]))
    assert stored(store) == [(b"r", "f1", b"q", b"last", 5)]


def test_a_batch_larger_than_one_statement_is_stored_whole(store: Store, monkeypatch) -> None:
    monkeypatch.setattr(arrow_cells, "SLICE_CELLS", 7)
    cells = [(b"r%03d" % i, FAMILIES[i % 12], b"q%d" % i, b"v" * i) for i in range(50)]
    load(store, batch(cells))
    assert stored(store) == sorted((*cell, 5) for cell in cells)


def test_a_batch_of_chunked_columns_is_stored_whole(store: Store) -> None:
    first = [(b"a", "f0", b"q", b"1"), (b"b", "f1", b"q", b"2")]
    second = [(b"c", "f2", b"q", b"3")]
    load(store, pa.concat_tables([batch(first), batch(second)]))
    assert stored(store) == sorted((*cell, 5) for cell in first + second)


@pytest.mark.parametrize("column", ["row", "family", "qualifier", "value"])
def test_a_null_in_a_batch_is_refused_naming_its_column(store: Store, column: str) -> None:
    load(store, batch([(b"kept", "f0", b"q", b"v")]), timestamp=1)
    cell = {"row": b"r", "family": "f0", "qualifier": b"q", "value": b"v", column: None}
    with pytest.raises(GatewayIllegalArgument, match=f"a cell's {column} is null"):
        load(store, batch([(b"r0", "f0", b"q", b"v"), tuple(cell.values())]))
    assert stored(store) == [(b"kept", "f0", b"q", b"v", 1)]


def test_a_cell_of_an_unknown_family_is_refused_naming_it(store: Store) -> None:
    with pytest.raises(GatewayIOError, match="NoSuchColumnFamily.*nope"):
        load(store, batch([(b"r", "f0", b"q", b"v"), (b"r", "nope", b"q", b"v")]))
    assert stored(store) == []


def load_steps(store: Store, cells: pa.Table, replacement: RowReplacement) -> int:
    """SQLite virtual-machine instructions (in thousands) the load of ``cells`` runs."""
    steps = 0

    def count() -> int:
        nonlocal steps
        steps += 1
        return 0

    store._writer.set_progress_handler(count, 1000)
    try:
        load_replacing_rows(store, b"t", [cells], replacement, 10)
    finally:
        store._writer.set_progress_handler(None, 1000)
    return steps


def test_a_loads_work_does_not_grow_with_the_rows_it_does_not_hold(tmp_path: Path) -> None:
    """A file's rows are looked up in the stored cells and delete markers, never the other
    way round: a day's load into a store of many days stays the size of the day."""
    replacement = RowReplacement(families=(b"f0",), columns=(b"f1:m",))
    day = batch([(b"day%02d" % i, "f0", b"q", b"v") for i in range(20)])
    steps = {}
    for others in (0, 20_000):
        store = Store(tmp_path / str(others))
        store.create_table(b"t", [FamilyDescriptor(name.encode()) for name in FAMILIES])
        if others:
            rows = [(b"other%05d" % i, "f0", b"q%d" % (i % 3), b"v") for i in range(others)]
            load_replacing_rows(store, b"t", [batch(rows)], replacement, 1)
            # Their dropped columns leave delete markers too.
            load_replacing_rows(store, b"t", [batch(rows[: others // 2])], replacement, 2)
            later = batch([(row, "f0", b"other", b"v") for row, *_ in rows[: others // 2]])
            load_replacing_rows(store, b"t", [later], replacement, 3)
        steps[others] = load_steps(store, day, replacement)
        store.close()
    assert steps[20_000] <= 2 * steps[0] + 5
