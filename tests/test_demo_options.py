"""The demo's traffic options: refused with the option named before anything is generated."""

from __future__ import annotations

import pytest

from profile_assets.demo import main


def test_fewer_than_one_event_per_person_is_refused_naming_the_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--events-per-person", "0.5"])
    assert exit_.value.code == 2
    assert "argument --events-per-person: must be at least 1, got 0.5" in capsys.readouterr().err
