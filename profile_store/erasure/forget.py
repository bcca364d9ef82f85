"""Recording a request to forget a person, and what it does at once.

In this order, so that a failure part-way leaves the request to the erasure step rather than
lost: the request is written to the lake; the ids are put on the suppression list; the
person's rows are deleted from the ``profiles`` table; the request is rewritten with the counts
of what went. The erasure step (``lake_rewrite``) does the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime

from profile_store.erasure.profiles_table import delete_person
from profile_store.erasure.requests import ErasureRequest, GivenId, new_request, save_request
from profile_store.erasure.resolution import resolve
from profile_store.erasure.suppression import add_to_list
from profile_store.lake_storage import LakeStorage


@dataclass(frozen=True)
class ForgetResult:
    request: ErasureRequest
    profiles_resolved: int
    found: bool


def forget(
    storage: LakeStorage,
    open_profiles_table: Callable[[], AbstractContextManager],
    given: list[GivenId],
    now: datetime | None = None,
) -> ForgetResult:
    """Record the request for ``given``, suppress the person and delete their HBase rows."""
    request = new_request(given, now)
    save_request(storage, request)
    person = resolve(storage, given)
    digests = add_to_list(storage, request.request_id, person.suppressed_ids)
    with open_profiles_table() as table:
        deleted = delete_person(table, person)
    request = replace(
        request,
        immediate={
            "found": person.known,
            "profiles_resolved": len(person.profiles),
            "keys_resolved": len(person.keys),
            "ids_suppressed": digests,
            **{f"{area}_deleted": count for area, count in deleted.as_dict().items()},
        },
    )
    save_request(storage, request)
    return ForgetResult(request, len(person.profiles), person.known)
