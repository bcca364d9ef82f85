import argparse
from pathlib import Path

from profile_store.cli import generator as cli


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


def generate(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="profiles")
    cli.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["generate", "--days", "1", "--events-per-day", "200", *argv])
    return args.func(args)


def test_an_out_path_that_is_a_file_is_an_error_in_words(tmp_path: Path, capsys) -> None:
    target = tmp_path / "a-file"
    target.write_text("keep me")
    assert generate("--out", str(target)) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --out {target}: exists and is not a directory")
    assert "Traceback" not in err and target.read_text() == "keep me"


def test_an_unwritable_out_path_is_an_error_without_a_traceback(tmp_path: Path, capsys) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "landing").write_text("a file where a directory must go")
    assert generate("--out", str(locked)) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: cannot write the lake under {locked}") and "Traceback" not in err


def test_a_lake_with_generated_days_is_kept_unless_overwrite_is_given(
    tmp_path: Path, capsys
) -> None:
    assert generate("--out", str(tmp_path), "--start-date", "2026-11-01") == 0
    before = (tmp_path / "ground_truth" / "identities.parquet").read_bytes()
    assert generate("--out", str(tmp_path), "--start-date", "2026-12-01") == 2
    err = capsys.readouterr().err
    assert "already holds generated days 2026-11-01..2026-11-01" in err and "--overwrite" in err
    assert (tmp_path / "ground_truth" / "identities.parquet").read_bytes() == before
    assert generate("--out", str(tmp_path), "--start-date", "2026-12-01", "--overwrite") == 0
    assert [p.name for p in (tmp_path / "landing").iterdir()] == ["date=2026-12-01"]


def test_generation_starts_with_a_line_and_counts_days_and_events(tmp_path: Path, capsys) -> None:
    assert generate("--out", str(tmp_path)) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"generating 1 days x 200 events (seed 7) into {tmp_path} ..."
    assert "day 1/1" in lines[1] and "(200/200)" in lines[1]
