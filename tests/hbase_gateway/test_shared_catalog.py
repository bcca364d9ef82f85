"""Several processes on one store: what one commits, the others read, with or without a shared
catalog signal (a gateway's workers share one; separate gateways do not)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from profile_store.hbase_gateway.catalog import CatalogSignal
from profile_store.hbase_gateway.errors import GatewayIOError
from profile_store.hbase_gateway.schema import FamilyDescriptor
from profile_store.hbase_gateway.store import Store


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[tuple[Store, Store]]:
    """Two stores on one directory sharing a signal, as two workers of one gateway."""
    signal = CatalogSignal()
    one, two = Store(tmp_path, catalog_signal=signal), Store(tmp_path, catalog_signal=signal)
    yield one, two
    one.close()
    two.close()


def put(store: Store, row: bytes, value: bytes, ts: int | None = None) -> None:
    store.mutate_rows(b"t", [(row, [(False, b"cf:a", value)])], ts)


def newest(store: Store, row: bytes) -> bytes | None:
    found = store.get_rows(b"t", [row], None)
    return found[0][1][0][4] if found else None


def test_a_disabled_table_is_unreadable_through_the_other_store_at_once(pair) -> None:
    one, two = pair
    one.create_table(b"t", [FamilyDescriptor(b"cf")])
    put(two, b"r", b"1")
    one.set_enabled(b"t", False)
    with pytest.raises(GatewayIOError, match="TableNotEnabledException"):
        two.get_rows(b"t", [b"r"], None)
    one.set_enabled(b"t", True)
    assert newest(two, b"r") == b"1"


def test_a_table_deleted_and_created_again_is_read_as_the_new_table(pair) -> None:
    one, two = pair
    one.create_table(b"t", [FamilyDescriptor(b"cf")])
    put(one, b"r", b"old")
    assert newest(two, b"r") == b"old"  # two has cached the first table
    one.set_enabled(b"t", False)
    one.delete_table(b"t")
    one.create_table(b"t", [FamilyDescriptor(b"cf")])
    assert newest(two, b"r") is None
    put(one, b"r", b"new")
    assert newest(two, b"r") == b"new"


def test_a_server_timestamped_put_replaces_the_other_stores_put_of_the_same_millisecond(
    pair,
) -> None:
    """Timestamps are taken inside the write transaction, which SQLite serializes across
    processes: a later put never gets an earlier timestamp, and the same one replaces."""
    one, two = pair
    one.create_table(b"t", [FamilyDescriptor(b"cf", max_versions=1)])
    for i in range(300):
        put(one if i % 2 else two, b"r", b"%d" % i)
        assert newest(one, b"r") == newest(two, b"r") == b"%d" % i
    put(one, b"r", b"first", ts=7)
    put(two, b"r", b"second", ts=7)
    assert one.get_rows(b"t", [b"r"], None, before_ts=8)[0][1][0][3:] == (7, b"second")


def test_increments_through_two_stores_add_up_exactly(pair) -> None:
    one, two = pair
    one.create_table(b"t", [FamilyDescriptor(b"cf")])

    def bump(store: Store) -> None:
        for _ in range(200):
            store.increment([(b"t", b"c", b"cf:n", 1)])

    threads = [threading.Thread(target=bump, args=(s,)) for s in (one, two, one, two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert one.increment([(b"t", b"c", b"cf:n", 0)]) == [800]
