"""``profiles profile``: the real-time profile reads (``reads.py``) from the command line.

```
profiles profile get ID                          # the whole profile as of now
profiles profile segments ID [ID...] [--key-type email_sha256]
profiles profile connected ID1 ID2 [--lake ROOT]
profiles profile linked ID [--limit 20]
profiles profile masters [--page-size 100] [--after TOKEN]
profiles profile purge [--max-rows-per-second 500] [--max-rows N]
```

Readable output by default; ``--json`` prints one JSON object (the HTTP API's body for the same
read). Exit codes (``conventions``): 0 answered; 1 HBase unusable (or a row that does not
decode); 2 bad input, including a single id that has no profile (``get``, ``linked``,
``segments`` with one id). ``segments`` with several ids is the bidder's batch read: one round
trip, and an unknown id simply has no segments. ``connected`` adds, when the lake
(``PROFILES_LAKE_ROOT`` or ``--lake``) has an identity graph, its explanation: the chain of keys
linking the two ids, or the nearest reason they are not linked (``identity.link_explanation``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from profile_store.cli.argument_types import integer, number
from profile_store.cli.conventions import (
    EXIT_FAILURE,
    EXIT_INPUT,
    EXIT_OK,
    add_hbase_options,
    add_json_option,
    fail,
    reports_failures,
    shorten_usage,
    table_pool,
)
from profile_store.hbase.pool import table_opener
from profile_store.lake.layout import IDENTITY_PROFILES
from profile_store.lake.settings import LakeSettings
from profile_store.profiles.bodies import batch_body, profile_body, segments_body
from profile_store.profiles.expiry_purge import DEFAULT_PURGE_RATE, PurgeReport, purge_expired
from profile_store.profiles.reads import (
    Connection,
    CorruptRow,
    InvalidRequest,
    LinkedProfiles,
    MastersPage,
    ProfileReader,
    ProfileView,
    key_types_from_env,
)
from profile_store.profiles.table import PROFILE_TABLE

if TYPE_CHECKING:
    from profile_store.identity.link_explanation import LinkExplanation


class UnknownProfile(Exception):
    """The one id a command asked about has no profile row."""


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``profile`` sub-command on the ``profiles`` CLI."""
    parser = subparsers.add_parser(
        "profile",
        help="read profiles from HBase: segments, connections, linked ids, masters; purge",
        description="Real-time profile reads (reads.py counts their HBase round trips) and the "
        "expiry purge.",
    )
    return configure_parser(parser)


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    commands = parser.add_subparsers(dest="profile_command", metavar="COMMAND", required=True)

    get = _command(commands, "get", "the whole profile as of now", run_get)
    get.add_argument("id", help="a profile (device or cookie) id")

    segments = _command(
        commands, "segments", "live segments of one id, or of many in one round trip", run_segments
    )
    segments.add_argument("ids", nargs="+", metavar="ID", help="profile ids (or alternate ids)")
    segments.add_argument(
        "--key-type",
        help="also accept the ids as alternate ids of this type: member_id (a login) or "
        "email_sha256 (a hashed email) with the default bridging rules, or another alt_ids "
        "type that identity_edges is configured to bridge on",
    )

    connected = _command(commands, "connected", "whether two ids are one person", run_connected)
    connected.add_argument("a", metavar="ID1")
    connected.add_argument("b", metavar="ID2")
    connected.add_argument(
        "--lake",
        metavar="ROOT",
        help="the lake whose identity graph explains the answer: the chain of keys, or why "
        "not (default PROFILES_LAKE_ROOT; a lake without one: HBase's answer alone)",
    )

    linked = _command(commands, "linked", "the other ids of an id's person", run_linked)
    linked.add_argument("id", help="a profile id")
    linked.add_argument("--limit", type=integer, default=100, help="most ids listed (default 100)")

    masters = _command(commands, "masters", "a page of master profile ids", run_masters)
    masters.add_argument(
        "--page-size", type=integer, default=100, help="ids per page (default 100)"
    )
    masters.add_argument("--after", help="the previous page's next token")

    purge = _command(commands, "purge", "delete expired segment cells, throttled", run_purge)
    purge.add_argument(
        "--max-rows-per-second",
        type=number,
        default=DEFAULT_PURGE_RATE,
        help="scan rate ceiling (default %(default)s)",
    )
    purge.add_argument("--max-rows", type=integer, help="stop after this many rows (default: all)")
    purge.add_argument("--after", help="start after this profile id (a stopped purge's token)")
    for command in commands.choices.values():
        shorten_usage(command)
    return parser


def _command(
    commands: argparse._SubParsersAction,
    name: str,
    help: str,
    func: Callable[[argparse.Namespace], int],
) -> argparse.ArgumentParser:
    parser = commands.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".")
    add_json_option(parser)
    add_hbase_options(parser)
    parser.set_defaults(func=func)
    return parser


@reports_failures(PROFILE_TABLE)
def _answer(
    args: argparse.Namespace,
    read: Callable[[ProfileReader], Any],
    as_json: Callable[[Any], Any],
    readable: Callable[[Any], str],
) -> int:
    """Run ``read`` against HBase and print its answer; failures become exit codes."""
    try:
        with table_pool(args, PROFILE_TABLE) as pool:
            answer = read(ProfileReader(table_opener(pool, PROFILE_TABLE), key_types_from_env()))
    except InvalidRequest as exc:
        return fail(args, EXIT_INPUT, "invalid_request", str(exc))
    except UnknownProfile as exc:
        return fail(args, EXIT_INPUT, "unknown_profile", f"no profile {exc.args[0]!r}")
    except CorruptRow as exc:
        return fail(args, EXIT_FAILURE, "corrupt_row", f"a row does not decode: {exc}")
    print(json.dumps(as_json(answer)) if args.as_json else readable(answer))
    return EXIT_OK


def _found(answer: Any, id: str) -> Any:
    if answer is None:
        raise UnknownProfile(id)
    return answer


def run_get(args: argparse.Namespace) -> int:
    return _answer(
        args,
        lambda reader: _found(reader.profile(args.id), args.id),
        profile_body,
        format_profile,
    )


def run_segments(args: argparse.Namespace) -> int:
    if len(args.ids) == 1:
        [id] = args.ids
        return _answer(
            args,
            lambda reader: _found(reader.segments(id, key_type=args.key_type), id),
            lambda answer: segments_body(answer, args.key_type),
            lambda answer: format_segments({id: answer.segments}, answer.profile, id),
        )
    return _answer(
        args,
        lambda reader: reader.segments_batch(args.ids, key_type=args.key_type),
        batch_body,
        lambda batch: format_segments(batch.segments, unknown=batch.unknown),
    )


@dataclass(frozen=True)
class ExplainedConnection:
    """HBase's answer, and the lake identity graph's explanation of it (None: no graph)."""

    connection: Connection
    link: LinkExplanation | None


def _explained(reader: ProfileReader, args: argparse.Namespace) -> ExplainedConnection:
    # The explanation reads the lake's identity areas (Arrow); the read commands import it only
    # when asked, so that they start without Arrow or Spark.
    from profile_store.identity.link_explanation import explain_link
    from profile_store.identity.settings import (
        IDENTITY_CONFIG_ENV,
        IdentityConfigError,
        identity_rules_from_env,
    )

    connection = reader.connected(args.a, args.b)
    storage = LakeSettings.from_env(root=args.lake).storage()
    if not storage.exists(IDENTITY_PROFILES):
        return ExplainedConnection(connection, None)
    try:
        rules = identity_rules_from_env()
    except IdentityConfigError as error:
        raise InvalidRequest(IDENTITY_CONFIG_ENV, str(error)) from error
    return ExplainedConnection(connection, explain_link(storage, args.a, args.b, rules))


def connection_body(answer: ExplainedConnection) -> dict:
    """The HTTP API's body for the same read, and the lake's ``link`` when there is one."""
    body = asdict(answer.connection)
    if answer.link is not None:
        body["link"] = asdict(answer.link)
    return body


def run_connected(args: argparse.Namespace) -> int:
    return _answer(args, lambda reader: _explained(reader, args), connection_body, format_explained)


def run_linked(args: argparse.Namespace) -> int:
    return _answer(
        args,
        lambda reader: _found(reader.linked_profiles(args.id, limit=args.limit), args.id),
        asdict,
        format_linked,
    )


def run_masters(args: argparse.Namespace) -> int:
    return _answer(
        args,
        lambda reader: reader.masters(page_size=args.page_size, after=args.after),
        asdict,
        format_masters,
    )


def run_purge(args: argparse.Namespace) -> int:
    return _answer(
        args,
        lambda reader: purge_expired(
            reader.open_table,
            max_rows_per_second=args.max_rows_per_second,
            max_rows=args.max_rows,
            after=args.after,
        ),
        asdict,
        format_purge,
    )


# --- readable output ----------------------------------------------------------------------------


def _when(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _aligned(rows: dict[str, str], empty: str) -> list[str]:
    """``name  value`` lines, indented, names padded to one width; ``empty`` if there are none."""
    if not rows:
        return [f"  {empty}"]
    width = max(len(name) for name in rows)
    return [f"  {name:<{width}}  {value}" for name, value in rows.items()]


def _segment_lines(segments: dict[str, int]) -> list[str]:
    until = {segment: f"until {_when(expiry)}" for segment, expiry in segments.items()}
    return _aligned(until, "(no live segments)")


def format_segments(
    answers: dict[str, dict[str, int]],
    profile: str | None = None,
    id: str | None = None,
    unknown: list[str] | None = None,
) -> str:
    """Each id's live segments; for one id read through a lookup, the profile that answered."""
    lines = []
    for asked, segments in answers.items():
        via = f" (via {profile})" if profile is not None and profile != id else ""
        lines.append(f"{asked}{via}")
        lines += ["  (unknown id)"] if asked in (unknown or ()) else _segment_lines(segments)
    return "\n".join(lines)


def format_profile(view: ProfileView) -> str:
    master = "this profile" if view.is_master else view.master
    unsynced = ", ".join(view.unsynced) or "(none)"
    return "\n".join(
        [
            f"profile     {view.profile} ({view.id_type or 'unknown id type'})",
            f"master      {master}",
            f"devices     {view.devices}",
            f"first seen  {_when(view.first_seen_ms)}",
            f"as of       {_when(view.as_of_ms)} (now {_when(view.now_ms)})",
            f"unsynced    {unsynced}",
            "segments",
            *_segment_lines(view.segments),
            "counters (decayed to now)",
            *_aligned({event: f"{value:.4g}" for event, value in view.counters.items()}, "(none)"),
            f"linked      {', '.join(view.linked) or '(none)'}",
        ]
    )


def format_connection(answer: Connection) -> str:
    lines = [
        f"connected   {'yes' if answer.connected else 'no'}",
        f"master of {answer.a}  {answer.master_a or '(unknown id)'}",
        f"master of {answer.b}  {answer.master_b or '(unknown id)'}",
    ]
    if answer.edge is not None:
        rules = ", ".join(answer.edge.rules)
        lines.append(f"edge        weight {answer.edge.weight:g} ({rules})")
    return "\n".join(lines)


def format_link(link: LinkExplanation) -> str:
    """The chain of keys, one hop a line, or the nearest reason the ids are not linked."""
    if not link.chain:
        label = "why" if link.linked else "why not"
        return f"{label:<12}{link.detail}"
    lines = [f"{'chain':<12}{link.detail}"]
    for hop in link.chain:
        lines.append(f"  {hop.profile_a} -> {hop.profile_b}  {hop.key_type} {hop.key}")
    return "\n".join(lines)


def format_explained(answer: ExplainedConnection) -> str:
    shown = format_connection(answer.connection)
    return shown if answer.link is None else f"{shown}\n{format_link(answer.link)}"


def format_linked(answer: LinkedProfiles) -> str:
    shown = f"{len(answer.linked)} of {answer.devices - 1}"
    lines = [f"{answer.profile}: master {answer.master}, {answer.devices} devices, {shown} listed"]
    lines += _aligned(answer.linked, "(no other ids stored)")
    if answer.truncated:
        lines.append("  (truncated)")
    return "\n".join(lines)


def format_masters(page: MastersPage) -> str:
    lines = list(page.ids) or ["(no masters)"]
    if page.next_after is not None:
        lines.append(f"next page: --after {page.next_after}")
    return "\n".join(lines)


def format_purge(report: PurgeReport) -> str:
    lines = [
        f"rows scanned   {report.rows_scanned:,}",
        f"rows purged    {report.rows_purged:,}",
        f"cells deleted  {report.cells_deleted:,}",
        f"time           {report.elapsed_s:,.1f} s",
        f"pages          {report.pages:,}",
    ]
    if report.cells_unreadable:
        lines.append(f"left alone     {report.cells_unreadable:,} cells that hold no expiry")
    if report.resume_after is not None:
        lines.append(f"stopped at --max-rows; continue with --after {report.resume_after}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = configure_parser(argparse.ArgumentParser(prog="profiles profile")).parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
