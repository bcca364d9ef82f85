"""The values command-line options take, each refused in words that say what was expected."""

from __future__ import annotations

import argparse
import re
from datetime import date


def positive_int(text: str) -> int:
    """An argument type: a whole number >= 1 (the error says so in words)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def whole_number(text: str) -> int:
    """An argument type: a whole number >= 0 (a seed, a row count)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def port_number(text: str) -> int:
    """An argument type: a TCP port, 0 (any free port) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be within 0-65535, got {text}")
    return value


def integer(text: str) -> int:
    """An argument type: any whole number; its range is the command's to check."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_number(text: str) -> float:
    """An argument type: a number > 0 (seconds, a rate)."""
    value = number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be greater than 0, got {text}")
    return value


def number(text: str) -> float:
    """An argument type: any number; its range is the command's to check."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def share(text: str) -> float:
    """An argument type: a fraction within [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be within [0, 1], got {text}")
    return value


def name_value(text: str) -> tuple[str, str]:
    """An argument type: ``NAME=VALUE`` (a server's configuration property)."""
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name.strip(), value


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def iso_date(text: str) -> date:
    """An argument type: a calendar date written YYYY-MM-DD (and no other ISO form)."""
    try:
        if not _ISO_DATE.match(text):
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r}") from None
