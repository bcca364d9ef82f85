"""``profiles generate``: write a deterministic synthetic event lake for demos and tests."""

from __future__ import annotations

import argparse
from datetime import date
from pathlib import Path

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
    parser.add_argument("--days", type=_positive_int, default=7)
    parser.add_argument("--events-per-day", type=_positive_int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--start-date",
        type=date.fromisoformat,
        default=DEFAULT_START_DATE,
        help="first day, YYYY-MM-DD (default: %(default)s)",
    )
    parser.add_argument(
        "--malformed-share",
        type=_share,
        default=0.005,
        help="share of malformed rows per day (default: %(default)s)",
    )
    parser.add_argument(
        "--events-per-part",
        type=_positive_int,
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


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _share(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within [0, 1], got {text}")
    return value
