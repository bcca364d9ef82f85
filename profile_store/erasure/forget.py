"""Recording a request to forget a person, and what it does at once.

The person is resolved first (``resolution``), and a request naming a quarantined key or
resolving to more profiles than its bound is refused (``ErasureRefused``) before anything is
written. Then, in this order: the request is written to the lake with its plan (the profiles and
keys it will remove); the ids go on the suppression list (one file, written at once); the
person's rows are deleted from the ``profiles`` table; the request is rewritten with the counts
of what went. If one of these fails, the request is taken back (its suppression file and its
request file deleted) and the error raised: a failed request leaves no partial suppression
list, and the caller can simply repeat it. The erasure step (``erasure_step``) does the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from datetime import datetime

from profile_store.erasure.profiles_table import ImmediateDeletion, delete_person, rows_of_person
from profile_store.erasure.requests import (
    DEFAULT_MAX_PROFILES,
    ErasureRequest,
    GivenId,
    new_request,
    save_request,
)
from profile_store.erasure.resolution import DEFAULT_WEIGHT_THRESHOLD, Person, resolve
from profile_store.lake.storage import LakeStorage
from profile_store.suppression.salted_digests import add_to_list, remove_from_list


@dataclass(frozen=True)
class ForgetResult:
    request: ErasureRequest
    profiles_resolved: int
    found: bool


def plan_of(person: Person) -> dict:
    """What the request will remove, named before anything is removed (ids: request file only)."""
    return {
        "profiles": sorted(person.profiles),
        "keys": [list(pair) for pair in sorted(person.keys)],
        "suppressed_ids": len(person.suppressed_ids),
        "quarantined_keys_not_followed": len(person.quarantined),
    }


@dataclass(frozen=True)
class ForgetPreview:
    """What ``forget`` would do, found without writing anything."""

    plan: dict  # plan_of(person): what the request would name
    found: bool
    immediate: ImmediateDeletion  # the HBase rows and cells it would delete at once


def preview(
    storage: LakeStorage,
    open_profiles_table: Callable[[], AbstractContextManager],
    given: list[GivenId],
    max_profiles: int = DEFAULT_MAX_PROFILES,
    threshold: float = DEFAULT_WEIGHT_THRESHOLD,
) -> ForgetPreview:
    """The resolution of ``given`` (refused as ``forget`` refuses it) and the rows it would
    delete at once; nothing is written: no request, no suppression, no delete."""
    person = resolve(storage, given, max_profiles, threshold)
    with open_profiles_table() as table:
        rows = rows_of_person(table, person)
    return ForgetPreview(plan_of(person), person.known, rows.counts())


def forget(
    storage: LakeStorage,
    open_profiles_table: Callable[[], AbstractContextManager],
    given: list[GivenId],
    now: datetime | None = None,
    max_profiles: int = DEFAULT_MAX_PROFILES,
    threshold: float = DEFAULT_WEIGHT_THRESHOLD,
) -> ForgetResult:
    """Record the request for ``given``, suppress the person and delete their HBase rows."""
    person = resolve(storage, given, max_profiles, threshold)
    request = replace(new_request(given, now, max_profiles), plan=plan_of(person))
    save_request(storage, request)
    try:
        digests = add_to_list(storage, request.request_id, person.suppressed_ids)
        with open_profiles_table() as table:
            deleted = delete_person(table, person)
        request = replace(
            request,
            immediate={
                "found": person.known,
                "profiles_resolved": len(person.profiles),
                "keys_resolved": len(person.keys),
                "keys_quarantined": len(person.quarantined),
                "ids_suppressed": digests,
                **{f"{area}_deleted": count for area, count in deleted.as_dict().items()},
            },
        )
        save_request(storage, request)
    except BaseException:
        remove_from_list(storage, request.request_id)
        storage.delete_tree(request.path)
        raise
    return ForgetResult(request, len(person.profiles), person.known)
