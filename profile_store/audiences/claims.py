"""Unique keys held by rows, taken and given back with HBase's ``checkAndPut``.

A claim is a row of its own (its key is the unique value, e.g. a tenant's audience name), whose
one cell ``d:owner`` names the row holding it and a nonce: ``<owner row> <nonce>``, or is empty
when free. Taking a claim is one compare-and-set from free to ours, so of two writers racing for
one value exactly one wins, in one HBase process or across several service processes; no lock is
held between calls.

A claim can outlive its need (a process stopped between two calls), so it is taken over when its
owner no longer holds it, which only the owner's row can tell (``holds``); the takeover is again a
compare-and-set from the value read, so a refreshed claim is never taken.

happybase does not wrap ``checkAndPut``; its Thrift client does (``connection.client``). The
embedded gateway implements it as Apache HBase does (tests/conformance compares them).
"""

from __future__ import annotations

from collections.abc import Callable

import happybase  # noqa: F401  (importing happybase loads its Thrift module, Hbase_thrift)
from Hbase_thrift import Mutation

OWNER = b"d:owner"
MAX_ATTEMPTS = 8


def check_and_put(table, row: bytes, column: bytes, expected: bytes | None, value: bytes) -> bool:
    """Put ``value`` in ``row``'s ``column`` if that cell holds ``expected`` now (None: the cell
    is absent; ``b""``: absent or empty, as in HBase). One round trip, atomic."""
    client = table.connection.client
    put = Mutation(column=column, value=value)
    return bool(client.checkAndPut(table.name, row, column, expected, put, {}))


def owner_of(table, claim: bytes) -> bytes:
    """The claim's cell: ``<owner row> <nonce>``, or ``b""`` when free."""
    return table.row(claim, columns=[OWNER]).get(OWNER, b"")


def take(
    table, claim: bytes, owner: bytes, nonce: str, holds: Callable[[bytes, bytes], bool]
) -> bool:
    """Take ``claim`` for row ``owner``: True once it is ours (free, stale, or ours already,
    refreshed with ``nonce``), False when row ``holder`` still ``holds(holder, claim)``."""
    mine = owner + b" " + nonce.encode()
    for _ in range(MAX_ATTEMPTS):
        if check_and_put(table, claim, OWNER, b"", mine):
            return True
        current = owner_of(table, claim)
        if not current:
            continue  # given back between the two calls
        holder = current.rpartition(b" ")[0]
        if holder != owner and holds(holder, claim):
            return False
        if check_and_put(table, claim, OWNER, current, mine):
            return True
    return False


def give_back(table, claim: bytes, owner: bytes) -> None:
    """Free ``claim`` if row ``owner`` holds it (whatever its nonce); else leave it."""
    current = owner_of(table, claim)
    if current and current.rpartition(b" ")[0] == owner:
        check_and_put(table, claim, OWNER, current, b"")
