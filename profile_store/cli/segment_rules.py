"""``profiles segment-rules show`` and ``profiles segment-rules set FILE``: the one place the
segment rules are configured, for the daily run and the live job alike.

```
profiles segment-rules show [--lake ROOT]
profiles segment-rules set FILE [--lake ROOT]
```

``show`` prints the rules in force as JSON (what ``set`` takes) on stdout, and how many, their
digest and where they come from on stderr. ``set`` checks every rule of FILE (``-``: stdin)
before it replaces the lake's rules file in one write; a bad rule is named with its field and
nothing changes. A change takes effect at the next daily run of ``compacted_profiles`` and in a
running ``profiles stream live-profiles`` within its ``--rules-refresh-seconds``. Exit codes:
0 done; 1 the lake unusable; 2 bad rules or an unreadable FILE.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError

from profile_store.cli.conventions import EXIT_FAILURE, EXIT_INPUT, EXIT_OK
from profile_store.lake.settings import LakeSettings
from profile_store.profiles.rules_in_force import read_rules_in_force, replace_rules_in_force
from profile_store.profiles.segment_rules import SegmentRuleError

TAKES_EFFECT = (
    "takes effect at the next daily run of compacted_profiles, and in a running "
    "`profiles stream live-profiles` within its --rules-refresh-seconds (60 by default)"
)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register ``segment-rules`` and its ``show`` and ``set`` commands."""
    parser = subparsers.add_parser(
        "segment-rules",
        help="the segment rules in force (the daily run's and the live job's)",
        description="The segment rules turn events into segment memberships with a TTL. Both "
        "the daily compacted_profiles run and `profiles stream live-profiles` read them from "
        "the lake (config/segment_rules.json; absent: the built-in rules). A change "
        f"{TAKES_EFFECT}.",
    )
    commands = parser.add_subparsers(dest="rules_command", metavar="COMMAND", required=True)
    show = commands.add_parser(
        "show", help="print the rules in force as JSON (their digest on stderr)"
    )
    replace = commands.add_parser(
        "set",
        help="replace the rules in force with FILE's, once every rule of it is valid",
        description="Replace the rules in force with the JSON list of FILE (- reads stdin): "
        "each rule has segment, event_type and ttl_days, optionally app_id and attributes. "
        "Every rule is checked first; a bad one is named with its field and nothing changes.",
    )
    replace.add_argument("file", metavar="FILE", help="JSON list of rules (- : stdin)")
    for command in (show, replace):
        command.add_argument(
            "--lake",
            help="lake root, a directory or s3://bucket/prefix "
            "(default: PROFILES_LAKE_ROOT, else data/lake)",
        )
    show.set_defaults(func=run_show)
    replace.set_defaults(func=run_set)
    return parser


def run_show(args: argparse.Namespace) -> int:
    try:
        in_force = read_rules_in_force(LakeSettings.from_env(root=args.lake).storage())
    except (SegmentRuleError, ValueError) as error:
        return _failed("show", error, EXIT_INPUT)
    except (OSError, BotoCoreError, ClientError) as error:
        return _failed("show", error, EXIT_FAILURE)
    sys.stdout.write(in_force.as_json())
    print(in_force.describe(), file=sys.stderr)
    return EXIT_OK


def run_set(args: argparse.Namespace) -> int:
    try:
        data = sys.stdin.read() if args.file == "-" else Path(args.file).read_bytes()
    except OSError as error:
        return _failed("set", f"{args.file}: {error.strerror}", EXIT_INPUT)
    try:
        storage = LakeSettings.from_env(root=args.lake).storage()
        replaced = replace_rules_in_force(storage, data, "stdin" if args.file == "-" else args.file)
    except (SegmentRuleError, ValueError) as error:
        return _failed("set", f"{error}; the rules in force are unchanged", EXIT_INPUT)
    except (OSError, BotoCoreError, ClientError) as error:
        return _failed("set", f"{error}; the rules in force are unchanged", EXIT_FAILURE)
    print(f"segment rules replaced: {replaced.describe()}; this {TAKES_EFFECT}")
    return EXIT_OK


def _failed(command: str, error: object, code: int) -> int:
    print(f"profiles segment-rules {command}: {error}", file=sys.stderr)
    return code
