"""The immediate part of an erasure: the person's rows leave the ``profiles`` table at once.

Deleted in one batch: every profile row of the person (``p|id``), the lookup rows of every key
they carried (``l|type|key``; a key others also carried comes back, naming the others' master,
when the erasure step recompacts them), every edge row with one end in the person
(``e|a|b``), and the ``a:<id>`` cells naming one of their ids on the rows of the others in
their component. A bidder reading any of the person's ids then finds nothing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from profile_store.erasure.resolution import Person
from profile_store.profiles.table import ASSOCIATIONS, column, edge_key, lookup_key, profile_key


@dataclass(frozen=True)
class ImmediateDeletion:
    profile_rows: int
    lookup_rows: int
    edge_rows: int
    association_cells: int

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class PersonRows:
    """The person's rows the table holds, and the cells of others' rows that name them."""

    profile_rows: list[bytes]
    lookup_rows: list[bytes]
    edge_rows: list[bytes]
    naming: dict[bytes, list[bytes]]  # another profile's row -> its a:<id> cells naming them

    def counts(self) -> ImmediateDeletion:
        return ImmediateDeletion(
            profile_rows=len(self.profile_rows),
            lookup_rows=len(self.lookup_rows),
            edge_rows=len(self.edge_rows),
            association_cells=sum(len(columns) for columns in self.naming.values()),
        )


def delete_person(table, person: Person, batch_size: int = 500) -> ImmediateDeletion:
    """Delete the person's rows and the cells that name them; returns what existed and went."""
    rows = rows_of_person(table, person, batch_size)
    with table.batch(batch_size=batch_size) as batch:
        for key in rows.profile_rows + rows.lookup_rows + rows.edge_rows:
            batch.delete(key)
        for key, columns in rows.naming.items():
            batch.delete(key, columns=columns)
    return rows.counts()


def rows_of_person(table, person: Person, batch_size: int = 500) -> PersonRows:
    """What ``delete_person`` deletes, read only (``profiles forget --dry-run``)."""
    profile_keys = [profile_key(p) for p in sorted(person.profiles)]
    lookup_keys = [lookup_key(kind, key) for kind, key in sorted(person.keys)]
    edge_keys = sorted({edge_key(a, b) for a, b in person.edges})
    others = [profile_key(p) for p in sorted(person.component_members)]
    associations = [column(ASSOCIATIONS, p) for p in sorted(person.profiles)]

    def existing(keys: list[bytes]) -> list[bytes]:
        found: list[bytes] = []
        for start in range(0, len(keys), batch_size):
            found += [key for key, _ in table.rows(keys[start : start + batch_size])]
        return found

    naming: dict[bytes, list[bytes]] = {}
    for start in range(0, len(others), batch_size):
        chunk = others[start : start + batch_size]
        for key, cells in table.rows(chunk, columns=associations):
            naming[key] = list(cells)
    return PersonRows(existing(profile_keys), existing(lookup_keys), existing(edge_keys), naming)
