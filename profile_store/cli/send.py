"""``profiles send FILE...``: replay landing files (or any JSON lines) through the collector.

```
profiles send landing/date=2026-11-01/*.jsonl.gz --url http://127.0.0.1:8080 --key KEY
```

Each file is read a line at a time (gzip when its name ends in ``.gz``) and posted to ``POST
/v1/events`` as JSON lines, in batches of at most ``--batch-lines`` lines and
``BATCH_BYTES`` bytes, so the events take the path live traffic takes: ingest's rules, the
tenant's apps, Kafka before the answer. A 503 (Kafka unreachable) is retried after the
answer's ``Retry-After``, ``--retries`` times, with the same batch: an event written twice is
kept once. Exit 0: every line was answered, accepted or rejected (the report counts rejected
lines by reason); 1: the collector or Kafka could not take a batch; 2: a file cannot be read,
or the key was refused.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from profile_store.cli.argument_types import positive_int, positive_number, whole_number
from profile_store.cli.conventions import EXIT_FAILURE, EXIT_INPUT, EXIT_OK, add_json_option

URL_VARIABLE = "PROFILES_COLLECTOR_URL"
KEY_VARIABLE = "PROFILES_API_KEY"
DEFAULT_URL = "http://127.0.0.1:8080"
BATCH_BYTES = 448 * 1024  # under the route's 512 KiB bound, with room for one more line
EVENTS_PATH = "/v1/events"
TOO_LARGE = "body_too_large"  # a line larger than the route's bound, sent alone


class SendFailed(RuntimeError):
    """A batch could not be delivered; the message says why."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass
class SendReport:
    files: int = 0
    lines: int = 0
    accepted: int = 0
    rejected: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)  # file:line reason, the first few

    def as_dict(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "lines": self.lines,
            "accepted": self.accepted,
            "rejected": sum(self.rejected.values()),
            "rejected_by_reason": dict(sorted(self.rejected.items())),
            "examples": self.examples,
        }


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "send",
        help="replay landing files or JSON lines through the collector (POST /v1/events)",
        description="Post JSON lines files (gzip when named .gz) to the collector in bounded "
        "batches and report accepted and rejected lines by reason.",
    )
    parser.add_argument("files", nargs="+", type=Path, metavar="FILE")
    parser.add_argument(
        "--url",
        default=os.environ.get(URL_VARIABLE, DEFAULT_URL),
        help=f"the service (default: {URL_VARIABLE}, else {DEFAULT_URL})",
    )
    parser.add_argument(
        "--key",
        default=os.environ.get(KEY_VARIABLE),
        help=f"API key: a tenant's (its own apps) or an admin's (default: {KEY_VARIABLE})",
    )
    parser.add_argument(
        "--batch-lines",
        type=positive_int,
        default=1000,
        help="lines per request at most (default %(default)s)",
    )
    parser.add_argument(
        "--retries",
        type=whole_number,
        default=5,
        help="tries again of a batch answered 503, after its Retry-After (default %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_number,
        default=60.0,
        help="seconds per request (default %(default)s)",
    )
    add_json_option(parser)
    parser.set_defaults(func=run_send)
    return parser


def _open(path: Path) -> io.BufferedIOBase:
    return gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")  # noqa: SIM115


def batches(path: Path, max_lines: int, max_bytes: int) -> Iterator[tuple[int, list[bytes]]]:
    """(number of the batch's first line, from 1; its lines) of one file, blank lines kept
    (they keep the collector's indices equal to positions in the file)."""
    batch: list[bytes] = []
    size = 0
    first = 1
    with _open(path) as stream:
        for number, raw in enumerate(stream, start=1):
            line = raw.rstrip(b"\r\n")
            if batch and (len(batch) >= max_lines or size + len(line) + 1 > max_bytes):
                yield first, batch
                batch, size = [], 0
            if not batch:
                first = number
            batch.append(line)
            size += len(line) + 1
    if batch:
        yield first, batch


def _post(url: str, key: str, body: bytes, timeout: float) -> tuple[int, dict, dict]:
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/x-ndjson", "X-API-Key": key},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:  # noqa: S310
            return answer.status, dict(answer.headers), json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as error:
        text = error.read()
        try:
            payload = json.loads(text)
        except ValueError:
            payload = {"message": text.decode("utf-8", "replace")[:300]}
        return error.code, dict(error.headers), payload


def send_batch(
    url: str, key: str, lines: list[bytes], retries: int, timeout: float
) -> tuple[int, list[dict]]:
    """Post one batch; (accepted, rejected lines). 503 is tried again ``retries`` times."""
    body = b"\n".join(lines)
    for attempt in range(retries + 1):
        try:
            status, headers, payload = _post(url, key, body, timeout)
        except (urllib.error.URLError, OSError) as error:
            raise SendFailed(f"{url}: {getattr(error, 'reason', error)}") from None
        if status == 202:
            return payload["accepted"], payload["rejected"]
        if status == 422 and "rejected" in payload:
            return 0, payload["rejected"]
        if status == 400 and payload.get("error") == "no_events":  # only blank lines
            return 0, []
        if status == 413 and len(lines) == 1:
            return 0, [{"index": 0, "reason": TOO_LARGE}]
        message = payload.get("message", "")
        if status in (401, 403):
            raise SendFailed(f"the key was refused ({status}): {message}", EXIT_INPUT)
        if status != 503 or attempt == retries:
            raise SendFailed(f"{url} answered {status}: {message}")
        wait = headers.get("Retry-After", headers.get("retry-after", "5"))
        time.sleep(float(wait) if wait.replace(".", "", 1).isdigit() else 5.0)
    raise AssertionError("unreachable")


def run_send(args: argparse.Namespace) -> int:
    if not args.key:
        print(f"profiles send: no API key: pass --key or set {KEY_VARIABLE}", file=sys.stderr)
        return EXIT_INPUT
    url = args.url.rstrip("/") + EVENTS_PATH
    report = SendReport()
    code = EXIT_OK
    try:
        for path in args.files:
            report.files += 1
            for first, lines in batches(path, args.batch_lines, BATCH_BYTES):
                accepted, rejected = send_batch(url, args.key, lines, args.retries, args.timeout)
                report.lines += len(lines)
                report.accepted += accepted
                for line in rejected:
                    report.rejected[line["reason"]] += 1
                    if len(report.examples) < 10:
                        where = f"{path}:{first + line['index']}"
                        report.examples.append(f"{where} {line['reason']}")
    except OSError as error:
        print(f"profiles send: {error}", file=sys.stderr)
        code = EXIT_INPUT
    except SendFailed as error:
        print(f"profiles send: {error}", file=sys.stderr)
        code = error.exit_code
    if args.as_json:
        print(json.dumps({**report.as_dict(), "complete": code == EXIT_OK}))
    else:
        by_reason = ", ".join(f"{r} {n}" for r, n in sorted(report.rejected.items()))
        print(
            f"{report.lines} lines from {report.files} files: {report.accepted} accepted, "
            f"{sum(report.rejected.values())} rejected" + (f" ({by_reason})" if by_reason else "")
        )
        for example in report.examples:
            print(f"  {example}")
    return code
