"""What every command that reads HBase does when something below it fails (``reports_failures``)."""

from __future__ import annotations

import argparse
import json

import pyarrow as pa
from thriftpy2.thrift import TApplicationException

from profile_store.cli.conventions import InputError, reports_failures


def args(**given: object) -> argparse.Namespace:
    hbase = {f"hbase_{name}": None for name in ("host", "port", "transport", "protocol")}
    more = {f"hbase_{name}": None for name in ("table_prefix", "pool_size", "timeout_ms")}
    return argparse.Namespace(as_json=True, **hbase, **more, hbase_data_dir="data/x", **given)


def failing(error: BaseException):
    @reports_failures("profiles")
    def command(_args: argparse.Namespace) -> int:
        raise error

    return command


def reported(capsys) -> dict:
    return json.loads(capsys.readouterr().err)


def test_an_input_error_exits_2_naming_its_path(capsys):
    code = failing(InputError("invalid_json", "not JSON", "$"))(args())
    assert code == 2
    assert reported(capsys) == {"error": "invalid_json", "message": "not JSON", "path": "$"}


def test_a_table_hbase_does_not_have_says_where_it_was_looked_for(capsys):
    code = failing(TApplicationException(message="TableNotFoundException: profiles"))(args())
    assert code == 1
    body = reported(capsys)
    assert body["error"] == "table_not_found"
    assert "no 'profiles' table in the embedded HBase store at" in body["message"]


def test_an_unreachable_hbase_exits_1(capsys):
    code = failing(ConnectionRefusedError(111, "Connection refused"))(args())
    assert code == 1
    assert reported(capsys)["error"] == "hbase_unavailable"


def test_a_lake_file_that_does_not_decode_exits_1_naming_the_lake(capsys):
    code = failing(pa.ArrowInvalid("Parquet magic bytes not found"))(args())
    assert code == 1
    body = reported(capsys)
    assert (body["error"], body["message"]) == (
        "lake_unreadable",
        "lake: Parquet magic bytes not found",
    )


def test_a_command_that_succeeds_returns_its_own_code():
    @reports_failures("profiles")
    def command(_args: argparse.Namespace) -> int:
        return 0

    assert command(args()) == 0
