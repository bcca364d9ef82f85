"""``profiles generate``: write a deterministic synthetic event lake for demos and tests."""

from __future__ import annotations

import argparse
from pathlib import Path

from profile_store.cli_conventions import iso_date, positive_int, share
from profile_store.generator.lake import DEFAULT_START_DATE, DaySummary, generate_lake
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
        "--seed", type=int, default=7, help="random seed; same seed, same lake (default: 7)"
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
    parser.set_defaults(func=run)
    return parser


def run(args: argparse.Namespace) -> int:
    """Generate the lake, printing one progress line per day."""

    def progress(day: DaySummary) -> None:
        print(
            f"{day.date.isoformat()}  events={day.events:,}  malformed={day.malformed:,}  "
            f"duplicates={day.duplicates:,}  parts={day.parts}  {day.seconds:.1f}s",
            flush=True,
        )

    summary = generate_lake(
        args.out,
        days=args.days,
        events_per_day=args.events_per_day,
        seed=args.seed,
        start_date=args.start_date,
        malformed_share=args.malformed_share,
        events_per_part=args.events_per_part,
        on_day=progress,
    )
    print(
        f"wrote {summary.lines:,} lines ({summary.events:,} events, "
        f"{summary.events_per_second:,.0f} events/s) for {summary.devices:,} ids of "
        f"{summary.persons:,} persons to {summary.out_dir}",
        flush=True,
    )
    return 0
