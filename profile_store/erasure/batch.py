"""An erasure batch's journal: whom the batch forgets and which of its steps are done.

``erasure/batches/<batch id>.json`` is written once the batch's requests are resolved and the
days holding them found (``lake_rewrite.plan_erasure``), before anything is removed, and again
after each step with that step's figures. The lake no longer shows a person once their rows are
rewritten, so a run that fails after that (a crash, HBase gone, a killed executor) leaves their
resolution, their days and what was already done here: the next run resumes the batch, skips
the steps done and redoes the rest (each step is idempotent: a rewrite finds no more rows, a
rebuild writes the same sketches). Its requests stay pending until their reports are saved;
the journal is deleted after the last one. Like a request file, it holds ids (the resolved
persons), and only until its batch completes.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime

from profile_store.erasure.lake_rewrite import LakePlan
from profile_store.erasure.resolution import Person
from profile_store.lake.storage import LakeStorage

BATCHES = "erasure/batches"

_SETS = ("profiles", "logins", "component_members", "spellings")
_PAIRS = ("keys", "own_alternates", "given_keys", "edges", "quarantined")


def person_as_json(person: Person) -> dict:
    body: dict = {name: sorted(getattr(person, name)) for name in _SETS}
    body.update({name: sorted(map(list, getattr(person, name))) for name in _PAIRS})
    body["known"] = person.known
    return body


def person_from_json(body: dict) -> Person:
    def pairs(name: str) -> frozenset[tuple[str, str]]:
        return frozenset((first, second) for first, second in body[name])

    return Person(
        known=body["known"],
        profiles=frozenset(body["profiles"]),
        logins=frozenset(body["logins"]),
        component_members=frozenset(body["component_members"]),
        spellings=frozenset(body["spellings"]),
        keys=pairs("keys"),
        own_alternates=pairs("own_alternates"),
        given_keys=pairs("given_keys"),
        edges=pairs("edges"),
        quarantined=pairs("quarantined"),
    )


@dataclass
class ErasureBatch:
    batch_id: str
    started_at: str  # ISO-8601, UTC
    persons: dict[str, Person]  # request id -> its person, resolved when the batch began
    plan: LakePlan
    size: int  # requests it began with (those completed leave ``persons``)
    steps: dict[str, dict] = field(default_factory=dict)  # done: name -> figures and seconds
    runs: int = 1

    @property
    def path(self) -> str:
        return f"{BATCHES}/{self.batch_id}.json"

    def to_json(self) -> bytes:
        body = {f.name: getattr(self, f.name) for f in fields(self)}
        body["persons"] = {rid: person_as_json(p) for rid, p in self.persons.items()}
        body["plan"] = self.plan.as_json()
        return json.dumps(body, indent=1, sort_keys=True).encode()

    @classmethod
    def from_json(cls, data: bytes) -> ErasureBatch:
        body = json.loads(data)
        persons = {rid: person_from_json(p) for rid, p in body.pop("persons").items()}
        plan = LakePlan.from_json(body.pop("plan"))
        return cls(**body, persons=persons, plan=plan)


def new_batch_id(now: datetime | None = None) -> str:
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"eb-{moment:%Y%m%dT%H%M%S}-{secrets.token_hex(4)}"


def save_batch(storage: LakeStorage, batch: ErasureBatch) -> None:
    storage.write_bytes(batch.path, batch.to_json())


def unfinished_batches(storage: LakeStorage) -> list[ErasureBatch]:
    """Batches a run began and none finished, oldest first."""
    if not storage.exists(BATCHES):
        return []
    files = [f.path for f in storage.list_files(BATCHES) if f.path.endswith(".json")]
    batches = [ErasureBatch.from_json(storage.read_bytes(path)) for path in files]
    return sorted(batches, key=lambda b: (b.started_at, b.batch_id))
