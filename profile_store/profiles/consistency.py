"""Checks of the ``profiles`` table as a bidder would see it.

``master_references``: every ``s:master`` names a row that exists and is itself a master (a
star: one hop to the master, never a chain). ``component_agreement``: every profile of a
component returns the same segments and counters, and names the component's master — the
promise of compaction that any id gives the whole picture.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from profile_store.profiles.table import (
    MASTER,
    PROFILE_PREFIX,
    TYPE,
    TYPE_PROFILE,
    decode_profile,
    profile_id_of,
    profile_key,
)


@dataclass(frozen=True)
class MasterReferences:
    dependents: int
    masters: int
    problems: list[str] = field(default_factory=list)


def _chunks(items: Sequence, size: int) -> Iterable[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def master_references(table, batch_size: int = 1000, examples: int = 10) -> MasterReferences:
    """Scan every ``s:master`` and read the masters it names (batched)."""
    referenced: dict[str, str] = {}
    dependents = 0
    for key, row in table.scan(row_prefix=PROFILE_PREFIX, columns=[MASTER], batch_size=batch_size):
        dependents += 1
        referenced.setdefault(row[MASTER].decode(), profile_id_of(key))
    problems: list[str] = []
    masters = sorted(referenced)
    for chunk in _chunks(masters, batch_size):
        found = dict(table.rows([profile_key(m) for m in chunk], columns=[TYPE, MASTER]))
        for master in chunk:
            cells = found.get(profile_key(master))
            by = referenced[master]
            if cells is None or cells.get(TYPE) != TYPE_PROFILE:
                problems.append(f"{by} -> {master}: no such profile row")
            elif MASTER in cells:
                problems.append(f"{by} -> {master}: not a master (its master is {cells[MASTER]!r})")
    return MasterReferences(
        dependents,
        len(masters),
        problems[:examples]
        + ([f"... and {len(problems) - examples} more"] if len(problems) > examples else []),
    )


@dataclass(frozen=True)
class ComponentAgreement:
    components: int
    profiles: int
    problems: list[str] = field(default_factory=list)
    later: int = 0
    """Components not judged: a row of theirs holds a later day's state."""


def component_agreement(
    table,
    components: dict[str, list[str]],
    batch_size: int = 500,
    as_of_ms: int | None = None,
) -> ComponentAgreement:
    """Read every member of each component (master -> ids) and compare what they return.

    ``as_of_ms``: the end of the day the components are of. A day run again after later days
    leaves their rows alone (a row never goes back to an earlier day), so a component with a
    row of a later day is the later day's, not this one's: counted in ``later``, not judged.
    """
    problems: list[str] = []
    profiles = later = 0
    for master, ids in components.items():
        rows = {}
        for chunk in _chunks(sorted(ids), batch_size):
            rows.update(dict(table.rows([profile_key(i) for i in chunk])))
        missing = [i for i in ids if profile_key(i) not in rows]
        decoded = [decode_profile(key, cells) for key, cells in rows.items()]
        if as_of_ms is not None and any(p.as_of_ms > as_of_ms for p in decoded):
            later += 1
            continue
        profiles += len(ids)
        if missing:
            problems.append(f"component {master}: no row for {missing[:3]}")
            continue
        wrong_master = [p.profile for p in decoded if p.master != master]
        if wrong_master:
            problems.append(f"component {master}: {wrong_master[:3]} name another master")
        views = {
            (tuple(sorted(p.segments.items())), tuple(sorted(p.counters.items()))) for p in decoded
        }
        if len(views) > 1:
            problems.append(f"component {master}: {len(views)} different segment/counter sets")
    return ComponentAgreement(len(components) - later, profiles, problems, later)
