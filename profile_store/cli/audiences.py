"""``profiles audience``: estimate an audience from the command line, or serve the HTTP API.

```
profiles audience estimate query.json          # readable answer
profiles audience estimate - --json < q.json   # one JSON object, for machines
profiles audience serve --host 127.0.0.1 --port 8080 --tenants tenants.json
```

Exit codes: 0 answered; 2 the query (or another input) is wrong, the message names the JSON
path; 1 HBase could not be used. HBase settings and flags are ``conventions``'. ``serve`` is
``profiles serve`` (``cli/serve.py``): the one service with the audience and profile endpoints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from profile_store.audiences.admission import admissible_query
from profile_store.audiences.answerable import UnanswerableQuery
from profile_store.audiences.engine import AudienceEngine, AudienceEstimate
from profile_store.audiences.query import QueryError
from profile_store.audiences.sketch_table import SKETCH_TABLE, sketch_table_opener
from profile_store.cli import serve
from profile_store.cli.conventions import (
    EXIT_INPUT,
    EXIT_OK,
    InputError,
    add_hbase_options,
    add_json_option,
    fail,
    reports_failures,
    shorten_usage,
    table_pool,
)


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``audience`` sub-command on the ``profiles`` CLI."""
    parser = subparsers.add_parser(
        "audience",
        help="estimate audience sizes from the HBase sketches, or serve the HTTP API",
        description="Audience size estimates: one query from a file, or an HTTP service.",
    )
    return configure_parser(parser)


def configure_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    commands = parser.add_subparsers(dest="audience_command", metavar="COMMAND", required=True)

    estimate = commands.add_parser(
        "estimate",
        help="answer one audience query (JSON file or stdin)",
        description="Estimate the audience of a JSON query tree (see examples/"
        "audience_query.json). Exit codes: 0 answered, 1 HBase unusable, 2 bad query.",
    )
    estimate.add_argument("query", metavar="FILE|-", help="the query JSON file; - reads stdin")
    add_json_option(estimate)
    add_hbase_options(estimate)
    shorten_usage(estimate)
    estimate.set_defaults(func=run_estimate)

    serve.configure_parser(
        commands.add_parser(
            "serve",
            help=serve.SERVE_HELP,
            description="Run the HTTP service (audience and profile endpoints, the same as "
            "`profiles serve`) with uvicorn until SIGINT/SIGTERM.",
        )
    )
    return parser


def read_query(source: str) -> Any:
    """The decoded JSON of ``source`` (a path, or ``-`` for stdin)."""
    name = "stdin" if source == "-" else source
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("unreadable_query", f"cannot read {name}: {exc}") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise InputError("invalid_json", f"{name}: the JSON is nested too deeply", "$") from None
    except ValueError as exc:
        raise InputError("invalid_json", f"{name}: not valid JSON: {exc}", "$") from None


@reports_failures(SKETCH_TABLE)
def run_estimate(args: argparse.Namespace) -> int:
    tree = read_query(args.query)
    try:
        admissible_query(tree)  # a wrong query fails before any HBase work starts
    except QueryError as exc:
        return fail(args, EXIT_INPUT, "invalid_query", exc.problem, exc.path)
    try:
        with table_pool(args, SKETCH_TABLE) as pool:
            answer = AudienceEngine(sketch_table_opener(pool)).estimate(tree)
    except UnanswerableQuery as exc:  # valid, but the sketches cannot answer it (HTTP's 422)
        details = exc.details()
        return fail(args, EXIT_INPUT, "unanswerable_query", exc.problem, exc.path, details)
    except QueryError as exc:
        return fail(args, EXIT_INPUT, "unanswerable_query", exc.problem, exc.path)
    if args.as_json:
        print(json.dumps(answer.to_dict()))
    else:
        print(format_estimate(answer))
    return EXIT_OK


def format_estimate(answer: AudienceEstimate) -> str:
    """The answer for a human reader, one fact per line."""
    kind = "exact" if answer.exact else "estimated"
    whole = answer.to_dict()
    lines = [
        f"audience   {whole['estimate']:,} users ({kind})",
        f"95% range  {whole['lower_95']:,} to {whole['upper_95']:,}",
        f"rows read  {answer.rows_read:,}",
        f"time       {answer.elapsed_ms:,.1f} ms",
    ]
    lines += [f"warning    {warning}" for warning in answer.warnings]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = configure_parser(argparse.ArgumentParser(prog="profiles audience"))
    args = parser.parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
