"""``profiles generate``: write a deterministic synthetic event lake for demos and tests."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from profile_store.cli.argument_types import iso_date, positive_int, share, whole_number
from profile_store.cli.conventions import EXIT_FAILURE, EXIT_INPUT, EXIT_OK
from profile_store.generator.ground_truth import GROUND_TRUTH_DIR
from profile_store.generator.lake import (
    DEFAULT_START_DATE,
    LANDING_DIR,
    DaySummary,
    generate_lake,
)
from profile_store.generator.landing import EVENTS_PER_PART


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Register the ``generate`` sub-command."""
    parser = subparsers.add_parser(
        "generate",
        help="write synthetic landing files (gzip JSON lines) and their ground truth",
        description="Generate a deterministic multi-app event lake: DIR/landing/date=*/ "
        "and DIR/ground_truth/.",
    )
    parser.add_argument("--out", type=Path, required=True, help="output directory")
    parser.add_argument(
        "--days", type=positive_int, default=7, help="days to write (default: %(default)s)"
    )
    parser.add_argument(
        "--events-per-day",
        type=positive_int,
        default=200_000,
        help="events per day before duplicates and malformed rows (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=whole_number,
        default=7,
        help="random seed; same seed, same lake (default: 7)",
    )
    parser.add_argument(
        "--start-date",
        type=iso_date,
        default=DEFAULT_START_DATE,
        help="first day, YYYY-MM-DD (default: %(default)s)",
    )
    parser.add_argument(
        "--malformed-share",
        type=share,
        default=0.005,
        help="share of malformed rows per day (default: %(default)s)",
    )
    parser.add_argument(
        "--events-per-part",
        type=positive_int,
        default=EVENTS_PER_PART,
        help="events per landing part file (default: %(default)s)",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a lake's generated days and answer key (its landing/ and ground_truth/ "
        "are deleted first; assets computed from the old days are left as they are)",
    )
    parser.set_defaults(func=run)
    return parser


def generated_days(out: Path) -> list[str]:
    """The landing days already under ``out`` (``landing/date=YYYY-MM-DD``), sorted."""
    landing_dir = out / LANDING_DIR
    if not landing_dir.is_dir():
        return []
    return sorted(p.name.removeprefix("date=") for p in landing_dir.glob("date=*") if p.is_dir())


def _bar(done: int, total: int, width: int = 24) -> str:
    filled = width * done // total
    return "[" + "#" * filled + "." * (width - filled) + "]"


def run(args: argparse.Namespace) -> int:
    """Generate the lake, printing a start line and one progress line per day."""
    out: Path = args.out
    if out.exists() and not out.is_dir():
        print(f"error: --out {out}: exists and is not a directory", file=sys.stderr)
        return EXIT_INPUT
    existing = generated_days(out)
    if existing or (out / GROUND_TRUTH_DIR).exists():
        if not args.overwrite:
            held = f"days {existing[0]}..{existing[-1]}" if existing else "an answer key"
            print(
                f"error: --out {out}: already holds generated {held}; writing into it would "
                "mix two generations and replace their answer key. Pass --overwrite to replace "
                "them, or choose another directory.",
                file=sys.stderr,
            )
            return EXIT_INPUT
        shutil.rmtree(out / LANDING_DIR, ignore_errors=True)
        shutil.rmtree(out / GROUND_TRUTH_DIR, ignore_errors=True)

    total_events = args.days * args.events_per_day
    print(
        f"generating {args.days} days x {args.events_per_day:,} events (seed {args.seed}) "
        f"into {out} ...",
        flush=True,
    )
    written = {"days": 0, "events": 0}

    def progress(day: DaySummary) -> None:
        written["days"] += 1
        written["events"] += day.events
        print(
            f"{_bar(written['days'], args.days)} day {written['days']}/{args.days}  "
            f"{day.date.isoformat()}  events={day.events:,} "
            f"({written['events']:,}/{total_events:,})  malformed={day.malformed:,}  "
            f"duplicates={day.duplicates:,}  parts={day.parts}  {day.seconds:.1f}s",
            flush=True,
        )

    try:
        summary = generate_lake(
            out,
            days=args.days,
            events_per_day=args.events_per_day,
            seed=args.seed,
            start_date=args.start_date,
            malformed_share=args.malformed_share,
            events_per_part=args.events_per_part,
            on_day=progress,
        )
    except OSError as exc:
        where = exc.filename or out
        print(f"error: cannot write the lake under {out}: {where}: {exc.strerror}", file=sys.stderr)
        return EXIT_FAILURE
    print(
        f"wrote {summary.lines:,} lines ({summary.events:,} events, "
        f"{summary.events_per_second:,.0f} events/s) for {summary.devices:,} ids of "
        f"{summary.persons:,} persons to {summary.out_dir}",
        flush=True,
    )
    return EXIT_OK
