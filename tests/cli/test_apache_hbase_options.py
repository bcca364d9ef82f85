"""`make hbase` takes the Thrift server's settings as options, refused in words when wrong."""

from __future__ import annotations

import pytest

from profile_store.cli.launchers import build_parser, thrift_settings
from profile_store.launchers.apache_hbase import THRIFT_IDLE_TIMEOUT


def parsed(*options: str):
    return build_parser().parse_args(["apache-hbase", *options])


def test_the_idle_timeout_in_seconds_becomes_the_thrift_servers_read_timeout_in_ms() -> None:
    assert thrift_settings(parsed("--thrift-idle-timeout", "2.5")) == {THRIFT_IDLE_TIMEOUT: "2500"}


def test_thrift_settings_are_passed_as_given_and_the_idle_timeout_option_wins() -> None:
    args = parsed(
        "--thrift-setting",
        "hbase.thrift.minWorkerThreads=32",
        "--thrift-setting",
        f"{THRIFT_IDLE_TIMEOUT}=1000",
        "--thrift-idle-timeout",
        "5",
    )
    assert thrift_settings(args) == {
        "hbase.thrift.minWorkerThreads": "32",
        THRIFT_IDLE_TIMEOUT: "5000",
    }


def test_without_options_the_thrift_server_keeps_hbases_defaults() -> None:
    assert thrift_settings(parsed()) == {}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (("--thrift-idle-timeout", "0"), "must be greater than 0, got 0"),
        (("--thrift-idle-timeout", "soon"), "expected a number, got 'soon'"),
        (("--thrift-setting", "minWorkerThreads"), "expected NAME=VALUE, got 'minWorkerThreads'"),
        (("--thrift-setting", "=32"), "expected NAME=VALUE, got '=32'"),
    ],
)
def test_a_bad_thrift_option_is_refused_naming_it(options, message, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        parsed(*options)
    assert exited.value.code == 2
    error = capsys.readouterr().err
    assert options[0] in error
    assert message in error
