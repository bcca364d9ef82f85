import argparse
from pathlib import Path

from profile_store.generator import cli


def test_generate_command_writes_the_lake_and_reports_each_day(tmp_path: Path, capsys) -> None:
    parser = argparse.ArgumentParser(prog="profiles")
    cli.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        [
            "generate",
            "--days",
            "2",
            "--events-per-day",
            "1500",
            "--seed",
            "7",
            "--start-date",
            "2026-12-30",
            "--malformed-share",
            "0.01",
            "--out",
            str(tmp_path),
        ]
    )
    assert args.func(args) == 0
    assert sorted(path.name for path in (tmp_path / "landing").iterdir()) == [
        "date=2026-12-30",
        "date=2026-12-31",
    ]
    assert (tmp_path / "ground_truth" / "identities.parquet").is_file()
    progress = [line for line in capsys.readouterr().out.splitlines() if "events=" in line]
    assert len(progress) == 2 and "malformed=15" in progress[0]
