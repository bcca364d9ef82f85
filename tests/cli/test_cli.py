"""The ``profiles`` command line as a new user meets it: words, not Python names."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from profile_store.cli import main as cli
from profile_store.cli.main import COMMAND_GROUP, registered_commands
from profile_store.hbase_gateway.process import EmbeddedGateway

REPO = Path(__file__).resolve().parents[2]
QUERY = REPO / "examples" / "audience_query.json"


def run(*argv: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "profile_store.cli", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_version_prints_the_installed_release(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"profiles {version('adtech-profiles')}"


def test_a_mistyped_command_suggests_the_closest_one(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["profle", "get", "x"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "unknown command 'profle'" in err and "did you mean 'profile'?" in err


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["generate", "--out", "x", "--days", "two"], "expected a whole number, got 'two'"),
        (["generate", "--out", "x", "--days", "0"], "must be at least 1, got 0"),
        (["generate", "--out", "x", "--start-date", "2026-13-01"], "expected a date as YYYY-MM-DD"),
        (["generate", "--out", "x", "--start-date", "20261101"], "expected a date as YYYY-MM-DD"),
        (["profile", "get", "x", "--hbase-port", "-1"], "must be at least 1, got -1"),
        (["generate", "--out", "x", "--seed", "-3"], "must not be negative, got -3"),
        (["profile", "linked", "x", "--limit", "ten"], "expected a whole number, got 'ten'"),
        (["profile", "purge", "--max-rows-per-second", "fast"], "expected a number, got 'fast'"),
        (["serve", "--port", "http"], "expected a port number, got 'http'"),
        (["serve", "--port", "70000"], "must be within 0-65535, got 70000"),
    ],
)
def test_a_bad_option_value_is_explained_in_words(capsys, argv, words):
    with pytest.raises(SystemExit):
        cli.main(argv)
    err = capsys.readouterr().err
    assert words in err
    assert "_positive_int" not in err and "fromisoformat" not in err


def test_every_generate_option_has_a_help_text_with_its_default(capsys):
    with pytest.raises(SystemExit):
        cli.main(["generate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for option in ("--days", "--events-per-day", "--seed", "--start-date", "--malformed-share"):
        assert option in out
    assert out.count("(default") >= 6


@pytest.mark.parametrize(
    "argv",
    [
        ["profile", "segments", "--help"],
        ["profile", "get", "--help"],
        ["audience", "estimate", "-h"],
    ],
)
def test_usage_lines_stand_one_placeholder_for_the_hbase_flags(capsys, argv):
    with pytest.raises(SystemExit):
        cli.main(argv)
    out = capsys.readouterr().out
    usage = out.split("\n\n")[0]
    assert "[HBase options]" in usage and "--hbase-" not in usage
    assert "--hbase-data-dir" in out  # still explained in the help


def test_a_read_outside_the_repository_says_where_it_looked_and_creates_nothing(tmp_path):
    result = run("profile", "get", "cookie-1", cwd=tmp_path)
    assert result.returncode == 1
    assert f"no 'profiles' table in the embedded HBase store at {tmp_path}/data/hbase" in (
        result.stderr
    )
    assert "--hbase-data-dir" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_a_store_without_the_table_is_named_with_how_to_point_elsewhere(tmp_path, capsys):
    EmbeddedGateway(tmp_path).start().stop()  # a store that holds no table
    code = cli.main(["audience", "estimate", str(QUERY), "--hbase-data-dir", str(tmp_path)])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: no 'sketches' table in the embedded HBase store at {tmp_path}")


def every_command(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from every_command(sub, (*path, name))


def test_every_option_of_every_command_has_a_help_text():
    missing = [
        f"profiles {' '.join(path)} {action.option_strings[0]}"
        for path, parser in every_command(cli.build_parser())
        for action in parser._actions
        if action.option_strings and not action.help
    ]
    assert missing == []


def test_no_option_parses_with_a_bare_python_type():
    """``type=int`` would answer a typo with "invalid int value"; every option has a worded type."""
    bare = [
        f"profiles {' '.join(path)} {action.option_strings[0]}"
        for path, parser in every_command(cli.build_parser())
        for action in parser._actions
        if action.type in (int, float)
    ]
    assert bare == []


def test_profiles_run_comes_from_the_entry_point_group_the_dagster_layer_registers():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    registered = pyproject["project"]["entry-points"][COMMAND_GROUP]
    assert registered == {"run": "profile_assets.run_days"}
    assert [(e.name, e.value) for e in registered_commands()] == list(registered.items())


def test_the_help_lists_the_registered_commands_with_their_own():
    completed = run("--help")
    assert completed.returncode == 0
    assert re.search(r"^\s+run\s+run daily_pipeline for a day", completed.stdout, re.M)
    assert re.search(r"^\s+forget\s+forget a person everywhere", completed.stdout, re.M)


def test_a_library_command_starts_without_importing_the_dagster_layer():
    probe = (
        "import sys; from profile_store.cli.main import build_parser; "
        "build_parser(['profile', 'get', 'x']); "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'dagster', 'profile_assets'}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
    )
    assert completed.stdout.strip() == "[]", completed.stderr


def test_a_mistyped_registered_command_is_suggested():
    completed = run("rnu", "2026-11-01")
    assert completed.returncode == 2
    assert "did you mean 'run'?" in completed.stderr


def test_the_gateway_without_a_data_dir_is_refused_naming_the_option():
    completed = run("hbase-gateway", "--port", "0")
    assert completed.returncode == 2
    assert completed.stderr == "profiles hbase-gateway: --data-dir is required\n"


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (
            ["hbase-gateway", "backup", "--data-dir", "d"],
            "the following arguments are required: --to",
        ),
        (
            ["hbase-gateway", "restore", "--data-dir", "d"],
            "the following arguments are required: --from",
        ),
        (["hbase-gateway", "--data-dir", "d", "--liveness-timeout", "0"], "must be greater than 0"),
        (["stream", "lake-sink", "--liveness-timeout", "soon"], "expected a number, got 'soon'"),
    ],
)
def test_the_operations_options_are_checked(argv, words):
    completed = run(*argv)
    assert completed.returncode == 2
    assert words in completed.stderr
