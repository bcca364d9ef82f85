"""``profiles forget``: record an erasure request and take the person out of HBase at once.

```
profiles forget ID [ID ...] [--key-type member_id] [--max-profiles N] [--lake ROOT] [--dry-run]
                [--json]
```

Prints the request id and what was deleted at once (counts only). ``--dry-run`` prints what
the request would resolve (the person's profile ids and keys) and delete at once, and changes
nothing. The erasure step of the
daily schedule (or ``dagster asset materialize --select erasure``) does the rest. Exit codes as
every command: 0 recorded; 1 HBase or the lake unusable (nothing recorded); 2 bad input, or a
refused resolution (a quarantined key, more profiles than the bound; nothing recorded).
"""

from __future__ import annotations

import argparse
import json

from profile_store.cli.conventions import (
    EXIT_INPUT,
    EXIT_OK,
    add_hbase_options,
    add_json_option,
    fail,
    reports_failures,
    shorten_usage,
    table_pool,
)
from profile_store.erasure.forget import ForgetPreview, ForgetResult, forget, preview
from profile_store.erasure.requests import (
    MAX_PROFILES_ENV,
    PROFILE_ID,
    ErasureRefused,
    ErasureRequestError,
    checked_max_profiles,
    given_ids,
    max_profiles_from_env,
)
from profile_store.hbase.pool import table_opener
from profile_store.lake.settings import LakeSettings
from profile_store.profiles.reads import key_types_from_env
from profile_store.profiles.table import PROFILE_TABLE


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``forget`` on the ``profiles`` CLI."""
    parser = subparsers.add_parser(
        "forget",
        help="forget a person everywhere (erasure request): HBase at once, the lake next run",
        description="Record an erasure request for a person's ids: their rows leave the "
        "profiles table at once, their ids go on the suppression list (salted digests), and "
        "the erasure step removes them from the lake, the identity graph and the sketches.",
    )
    parser.add_argument("ids", nargs="+", metavar="ID", help="the person's ids")
    parser.add_argument(
        "--key-type",
        default=PROFILE_ID,
        help=f"what the ids are: {PROFILE_ID} (a device or cookie id, the default), member_id "
        "(a login) or email_sha256 (a hashed email), or another configured alternate id type",
    )
    parser.add_argument(
        "--max-profiles",
        metavar="N",
        help="refuse a person the identity graph resolves to more than N profiles (default: "
        f"{MAX_PROFILES_ENV}, else 100); raise it for one request after checking its ids",
    )
    parser.add_argument(
        "--lake",
        metavar="ROOT",
        help="directory or s3://bucket/prefix (default: PROFILES_LAKE_ROOT)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the resolution (profile ids, keys) and the rows it would delete at once; "
        "record and change nothing",
    )
    add_json_option(parser)
    add_hbase_options(parser)
    shorten_usage(parser)
    parser.set_defaults(func=run_forget)
    return parser


def format_result(result: ForgetResult) -> str:
    request = result.request
    if not result.found:
        head = f"request {request.request_id}: nothing found for these ids (suppressed anyway)"
    else:
        head = f"request {request.request_id}: {result.profiles_resolved} profile ids of the person"
    counts = [f"  {name}: {value}" for name, value in request.immediate.items()]
    return "\n".join([head, *counts, "the erasure step removes the rest from the lake"])


def format_preview(result: ForgetPreview) -> str:
    plan = result.plan
    if not result.found:
        head = "dry run, nothing changed: nothing found for these ids (they would be suppressed)"
    else:
        head = f"dry run, nothing changed: {len(plan['profiles'])} profile ids of the person"
    keys = ", ".join(f"{kind} {key}" for kind, key in plan["keys"]) or "none"
    lines = [
        head,
        f"  profiles: {', '.join(plan['profiles']) or 'none'}",
        f"  keys: {keys}",
        f"  ids to suppress: {plan['suppressed_ids']}",
        f"  quarantined keys not followed: {plan['quarantined_keys_not_followed']}",
        *(f"  would delete {name}: {count}" for name, count in result.immediate.as_dict().items()),
        "without --dry-run the request is recorded, these rows deleted at once, and the erasure "
        "step removes the rest from the lake",
    ]
    return "\n".join(lines)


@reports_failures(PROFILE_TABLE)
def run_forget(args: argparse.Namespace) -> int:
    try:
        given = given_ids(args.ids, args.key_type, key_types_from_env())
        if args.max_profiles is None:
            bound = max_profiles_from_env()
        else:
            bound = checked_max_profiles(args.max_profiles, "--max-profiles")
        lake = LakeSettings.from_env(root=args.lake)
        with table_pool(args, PROFILE_TABLE) as pool:
            opener = table_opener(pool, PROFILE_TABLE)
            if args.dry_run:
                planned = preview(lake.storage(), opener, given, bound)
            else:
                result = forget(lake.storage(), opener, given, None, bound)
    except ErasureRefused as exc:
        return fail(args, EXIT_INPUT, "erasure_refused", str(exc))
    except ErasureRequestError as exc:
        return fail(args, EXIT_INPUT, "invalid_request", str(exc))
    if args.dry_run:
        if args.as_json:
            body = {"dry_run": True, "found": planned.found, **planned.plan}
            print(json.dumps({**body, **planned.immediate.as_dict()}))
        else:
            print(format_preview(planned))
        return EXIT_OK
    if args.as_json:
        body = {
            "request_id": result.request.request_id,
            "found": result.found,
            **result.request.immediate,
        }
        print(json.dumps(body))
    else:
        print(format_result(result))
    return EXIT_OK
